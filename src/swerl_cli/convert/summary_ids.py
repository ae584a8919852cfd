"""The ids of a run summary read back by `convert` (`--from swebench-report`): the harness lists instance ids,
`swerl grade --report` lists record ids, `{instance_id}/{run}/{sample}` for trajectories and
`{instance_id}/{model_name_or_path}` for prediction rows. SWE-bench instance ids hold no `/`, so an id with one is
swerl's: the instance is what comes before the first `/`, and the run and sample (or the model) are kept.

    >>> split_summary_id("django__django-11099/iter-0/3")
    SummaryId(instance_id='django__django-11099', run='iter-0', sample=3, model=None)
    >>> split_summary_id("django__django-11099/org/model-1")
    SummaryId(instance_id='django__django-11099', run=None, sample=None, model='org/model-1')
    >>> split_summary_id("django__django-11099").instance_id
    'django__django-11099'
"""

from __future__ import annotations

from typing import NamedTuple


class SummaryId(NamedTuple):
    """One summary id taken apart; `run`/`sample` for a trajectory's id, `model` for a prediction row's."""

    instance_id: str
    run: str | None = None
    sample: int | None = None
    model: str | None = None


def split_summary_id(rid: str) -> SummaryId:
    """A summary id as the instance it grades and, for swerl's record ids, the run and sample or the model."""
    iid, _, rest = rid.partition("/")
    if not rest:
        return SummaryId(rid)
    run, _, sample = rest.rpartition("/")
    if run and sample.isdigit():
        return SummaryId(iid, run=run, sample=int(sample))
    return SummaryId(iid, model=rest)


def refusal(rid: str) -> str | None:
    """Why `rid` cannot be read as an instance id, or None: an empty instance or an empty part."""
    if rid.startswith("/") or rid.endswith("/") or "//" in rid or not rid.strip():
        return f"{rid!r} is neither an instance id nor a swerl record id (INSTANCE/RUN/SAMPLE, INSTANCE/MODEL)"
    return None
