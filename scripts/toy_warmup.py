"""RFT warm-up data for the toy RL task (`make demo`): teach a random tiny model the answer format first.

A random model never writes a parsable ```command block, so RL alone has nothing to reinforce (every group has
equal rewards and DAPO drops it). This writes RFT records that answer the toy task's real prompt (taken from one
probe episode, token ids included) with each of four command blocks, one of which fixes the task; after
`swerl rft` on them (the demo: 120 epochs) about a quarter of the rollouts succeed, which leaves RL room to learn.

    python scripts/toy_warmup.py MODEL PROBE.jsonl OUT.jsonl [REPS]
"""

from __future__ import annotations

import json
import sys

CANDIDATES = ("sed -i '/upper/d' greet/core.py", "sed -i '/Hello/d' greet/core.py", "cat greet/core.py", "ls")


def main(model: str, probe_path: str, out_path: str, reps: int = 4) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    with open(probe_path) as fh:
        probe = json.loads(fh.readline())
    with open(out_path, "w") as out:
        for r in range(reps):
            for i, cmd in enumerate(CANDIDATES):
                ids = tok.encode(f"```command\n{cmd}\n```", add_special_tokens=False) + [eos]
                turn = dict(probe["turns"][0], token_ids=ids, logprobs=None, format_error=False)
                rec = dict(probe, id=f"warm/{r}/{i}", run="warm", sample=r * len(CANDIDATES) + i, turns=[turn])
                out.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], *(int(a) for a in sys.argv[4:5]))
