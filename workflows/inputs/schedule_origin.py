"""Which schedule started a turn: Temporal's scheduler sets `TemporalScheduledById` on every
run it starts, and names the run `schedule:<schedule id>-<time>` as our schedules ask.

Both must agree: the attribute alone is a search attribute anyone starting a workflow could
set, the id alone a name; `schedule:` ids are refused at every client of ours
(`contracts/turn_ids.py`), so a turn at one was started by a schedule. Deterministic: both come
from the start event.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.schedules import SCHEDULED_BY, run_id_base


def scheduled_by(info: workflow.Info) -> str | None:
    """The name of the schedule that started the run of `info`, or None."""
    name = info.typed_search_attributes.get(SCHEDULED_BY)
    if name is None or not info.workflow_id.startswith(f"{run_id_base(name)}-"):
        return None
    return name
