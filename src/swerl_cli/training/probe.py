"""A forward-only probe of a checkpoint (issue 41): what an update moved, without sampling a single episode.

    data = ProbeData.load(gold_path, frame_path, tokenizer)      # fixed trajectories, rendered once
    ref = data.logprobs(reference_dir)                           # per-token log p under the reference (e.g. RFT)
    row = data.measure(data.logprobs(checkpoint_dir), ref)       # the numbers below

- gold: held-out gold-fix trajectories (gold patches acted out by the agent loop). `gold_edit_logprob` is the mean
  log p of the tokens of their edit turns (the action turn whose command is `edit`): how likely the checkpoint is to
  write the right fix on tasks it never trained on. `gold_action_logprob` is the mean over all their action tokens.
- frame: fixed trajectories whose command frame (``` fence lines and each command's first word) the update must not
  disturb: `frame_drift` is the mean |change of log p| on those tokens against the reference, `frame_delta` the
  signed mean (negative: the format gets less likely).
With a reference, `gold_*_delta` are the same means' change against it. Records without token ids (gold-steps
demonstrations) are rendered with the tokenizer's chat template, as `swerl rft --rerender` does. A forward pass on
a CPU is the cost (SmolLM2-135M: a few hundred tokens per second on 2 cores), so each gold trajectory is cut after
its last edit turn (the turns after it -- running the test, submitting -- are not measured), the checkpoint is
loaded once for both sets, and a reference's logprobs can be saved and reused (`save_logprobs`/`load_logprobs`).
Torch and transformers are imported inside the functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

FRAME = re.compile(r"```[^\n]*\n?")  # a fence line, opening (```command) or closing
COMMAND_WORD = re.compile(r"```[^\n]*\n[ \t]*(\S+)")  # the first word after an opening fence
EDIT_COMMAND = "edit"


def frame_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the command frame in one action turn's text: fence lines and each command's first word."""
    spans = [m.span() for m in FRAME.finditer(text)]
    spans += [m.span(1) for m in COMMAND_WORD.finditer(text)]
    return spans


def _action_runs(mask: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each run of action tokens (mask 1): one per action turn."""
    runs, i = [], 0
    while i < len(mask):
        if not mask[i]:
            i += 1
            continue
        j = i
        while j < len(mask) and mask[j]:
            j += 1
        runs.append((i, j))
        i = j
    return runs


def token_masks(tok: Any, ids: list[int], mask: list[int]) -> tuple[list[bool], list[bool]]:
    """Per token of a sample: (in the command frame of its action turn, in an action turn whose command is `edit`)."""
    frame, edit = [False] * len(ids), [False] * len(ids)
    for i, j in _action_runs(mask):
        pieces = [tok.decode([t]) for t in ids[i:j]]
        starts, pos = [], 0
        for p in pieces:
            starts.append(pos)
            pos += len(p)
        text = "".join(pieces)
        spans = frame_spans(text)
        is_edit = any(m.group(1) == EDIT_COMMAND for m in COMMAND_WORD.finditer(text))
        for k, (p, s) in enumerate(zip(pieces, starts, strict=True)):
            frame[i + k] = any(s < b and a < s + len(p) for a, b in spans)
            edit[i + k] = is_edit
    return frame, edit


def load_samples(path: str, tok: Any) -> list[Any]:
    """Every record of `path` as a training sample (all action tokens, format errors included)."""
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.training.data import trajectory_to_sample

    return [trajectory_to_sample(loc, tok, mask_format_errors=False, rerender=True) for loc in read_records(path)]


def token_logprobs(model_dir: str, *sets: list[Any]) -> list[list[list[float]]]:
    """log p of every token of each sample of each set under `model_dir` (fp32, CPU or the first GPU; the model loaded
    once), one sample per forward."""
    import torch
    from transformers import AutoModelForCausalLM

    from swerl_cli.training.batching import collate
    from swerl_cli.training.logprobs import packed_logprobs

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()
    with torch.inference_mode():
        return [[packed_logprobs(model, collate([s]), device)[0].cpu().tolist() for s in samples] for samples in sets]


def cut_after_last_edit(sample: Any, edit: list[bool]) -> tuple[Any, list[bool]]:
    """The sample up to the end of its last edit turn (unchanged when it has none)."""
    ends = [i + 1 for i, e in enumerate(edit) if e]
    if not ends:
        return sample, edit
    n = ends[-1]
    return replace(sample, input_ids=sample.input_ids[:n], loss_mask=sample.loss_mask[:n],
                   logprobs=sample.logprobs[:n], infer_logprobs=sample.infer_logprobs[:n]), edit[:n]  # fmt: skip


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


@dataclass
class ProbeData:
    """The probe's fixed trajectories and their token selections."""

    gold: list[Any]
    frame: list[Any]
    gold_edit: list[list[bool]] = field(default_factory=list)
    frame_tokens: list[list[bool]] = field(default_factory=list)

    @classmethod
    def load(cls, gold_path: str, frame_path: str, tok: Any, cut_gold: bool = True) -> ProbeData:
        """The trajectories of both files; with `cut_gold`, each gold one ends after its last edit turn."""
        gold = [(s, token_masks(tok, s.input_ids, s.loss_mask)[1]) for s in load_samples(gold_path, tok)]
        if cut_gold:
            gold = [cut_after_last_edit(s, e) for s, e in gold]
        data = cls([s for s, _ in gold], load_samples(frame_path, tok))
        data.gold_edit = [e for _, e in gold]
        data.frame_tokens = [token_masks(tok, s.input_ids, s.loss_mask)[0] for s in data.frame]
        return data

    def logprobs(self, model_dir: str) -> dict[str, list[list[float]]]:
        fix, frame = token_logprobs(model_dir, self.gold, self.frame)
        return {"fix": fix, "frame": frame}

    def fingerprint(self) -> str:
        """A hash of the probe's token sequences: a saved reference is reused only for the same trajectories."""
        import hashlib

        h = hashlib.sha256()
        for s in [*self.gold, *self.frame]:
            h.update(repr(s.input_ids).encode())
        return h.hexdigest()

    def save_logprobs(self, path: str, model_dir: str, lp: dict[str, list[list[float]]]) -> None:
        """Write a checkpoint's logprobs on these trajectories (a temporary file renamed into place)."""
        import json
        import os

        tmp = f"{path}.tmp"
        with open(tmp, "w") as fh:
            json.dump({"model": model_dir, "fingerprint": self.fingerprint(), **lp}, fh)
        os.replace(tmp, path)

    def load_logprobs(self, path: str) -> dict[str, list[list[float]]] | None:
        """Saved logprobs of these very trajectories, or None (absent, or saved for others)."""
        import json
        from pathlib import Path

        if not Path(path).is_file():
            return None
        saved = json.loads(Path(path).read_text())
        if saved.get("fingerprint") != self.fingerprint() or "fix" not in saved or "frame" not in saved:
            return None
        return {"fix": saved["fix"], "frame": saved["frame"]}

    def _gold(self, lp: list[list[float]], edit_only: bool) -> list[float]:
        out = []
        for s, em, row in zip(self.gold, self.gold_edit, lp, strict=True):
            out += [x for m, e, x in zip(s.loss_mask, em, row, strict=True) if m and (e or not edit_only)]
        return out

    def measure(self, after: dict[str, list[list[float]]], before: dict[str, list[list[float]]] | None = None) -> dict:
        """The probe's numbers for `after`; drift and deltas against `before` when given."""
        edit, action = self._gold(after["fix"], True), self._gold(after["fix"], False)
        row: dict[str, Any] = {
            "gold_edit_logprob": _mean(edit),
            "gold_edit_tokens": len(edit),
            "gold_action_logprob": _mean(action),
            "gold_action_tokens": len(action),
            "gold_trajectories": len(self.gold),
        }
        if before is None:
            return row
        frame = [
            a - b
            for fm, lb, la in zip(self.frame_tokens, before["frame"], after["frame"], strict=True)
            for f, b, a in zip(fm, lb, la, strict=True)
            if f
        ]
        ref_edit, ref_action = self._gold(before["fix"], True), self._gold(before["fix"], False)
        row["gold_edit_delta"] = _delta(edit, ref_edit)
        row["gold_delta"] = _delta(action, ref_action)
        row["frame_drift"] = _mean([abs(d) for d in frame])
        row["frame_delta"] = _mean(frame)
        row["frame_tokens"] = len(frame)
        return row


def _delta(after: list[float], before: list[float]) -> float | None:
    return _mean([a - b for a, b in zip(after, before, strict=True)])
