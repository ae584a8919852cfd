"""Turn prompts token-in/token-out vs re-rendering the whole conversation with the chat template.

A 100-turn agent conversation growing to about 64k tokens (the tiny model's tokenizer and ChatML template). At every
turn both ways build the next prompt: `render` applies the chat template to all messages (what a chat-completions
server does per request); `tito` is swerl's TurnPrompter (previous prompt + sampled ids + closing tokens + the
new messages rendered alone). CPU time per turn (process time) is compared; the two prompts are checked equal, so
the speed does not come from building something else. Target: >= 20x less CPU per turn.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TURNS = 100
TARGET_TOKENS = 64_000


def _conversation(tok, rng: random.Random) -> tuple[list[dict], list[list[int]]]:
    """System + user, then TURNS (assistant, observation) pairs sized to reach TARGET_TOKENS."""
    words = "the file function test error fix issue patch class method return value import module line".split()
    per_turn = TARGET_TOKENS // TURNS

    def text(n_tokens: int) -> str:
        out = []
        while len(tok.encode(" ".join(out), add_special_tokens=False)) < n_tokens:
            out.extend(rng.choice(words) for _ in range(20))
        return " ".join(out)

    messages = [{"role": "system", "content": text(300)}, {"role": "user", "content": text(300)}]
    sampled = []
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    for _ in range(TURNS):
        reply = text(per_turn // 3) + "\n```command\nls\n```"
        messages.append({"role": "assistant", "content": reply})
        sampled.append(tok.encode(reply, add_special_tokens=False) + [im_end])  # as a model stops: <|im_end|>
        messages.append({"role": "user", "content": text(2 * per_turn // 3)})
    return messages, sampled


def main() -> None:
    from swerl_cli.core.model_dir import load_tokenizer
    from swerl_cli.policy.base import EpisodeInfo
    from swerl_cli.policy.turns import local_prompter, render_ids

    model = ROOT / ".cache" / "tiny-model"
    if not (model / "config.json").is_file():
        raise RuntimeError(f"{model} missing: run `make tiny-model`")
    tok = load_tokenizer(str(model))
    messages, sampled = _conversation(tok, random.Random(0))
    prompter = local_prompter(tok)
    episode = EpisodeInfo("bench", 0, "bench", {})

    async def run() -> tuple[list[float], list[float], int]:
        render_cpu, tito_cpu = [], []
        n = 0
        for k in range(TURNS):
            upto = messages[: 2 + 2 * k]  # the history before assistant turn k
            t0 = time.process_time()
            full = render_ids(tok, upto, add_generation_prompt=True)
            render_cpu.append(time.process_time() - t0)
            t0 = time.process_time()
            tp = await prompter.build(upto, None, episode.tokens)
            tito_cpu.append(time.process_time() - t0)
            if tp.ids != full:
                raise RuntimeError(f"turn {k}: the token-in/token-out prompt differs from the full render")
            n = len(full)
            episode.tokens.commit(sampled[k])
        return render_cpu, tito_cpu, n

    render_cpu, tito_cpu, n = asyncio.run(run())
    last = slice(-10, None)
    print(f"{TURNS} turns, final prompt {n} tokens (the two builds are identical at every turn)")
    print(f"{'':24}{'render (ms/turn)':>18}{'tito (ms/turn)':>16}{'ratio':>8}")
    for label, sl in (("mean over all turns", slice(None)), ("last 10 turns", last)):
        r, t = statistics.mean(render_cpu[sl]) * 1e3, statistics.mean(tito_cpu[sl]) * 1e3
        print(f"{label:24}{r:>18.2f}{t:>16.3f}{r / t:>7.0f}x")
    ratio = statistics.mean(render_cpu) / statistics.mean(tito_cpu)
    print(f"token-in/token-out: {ratio:.0f}x less CPU per turn than re-rendering (target >= 20x)")
