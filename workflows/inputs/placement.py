"""Where a turn may run: the checks a turn makes of its own workflow id and of its request's
`parent` as it starts, so that a turn started past every client (with the raw `temporal` CLI)
at an id the runtime keeps, or claiming a parent that did not start it, fails at once with
`InvalidTurnRequest` instead of taking the id or showing up in another turn's pending list.

Deterministic: the workflow id and the parent come from the start event."""

from __future__ import annotations

from typing import Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.turn import TurnRequest
    from turnkeeper.contracts.turn_ids import NESTED_ID_SEPARATOR, runtime_prefixed

# Before it a turn ran wherever it was started (`turnkeeper fork` named its forks
# `<id>/fork-<n>`); a turn of such a history must replay as it ran.
RUNTIME_IDS_PATCH: Final = "turns-refuse-runtime-ids"


def placement_problem(
    request: TurnRequest, workflow_id: str, parent: workflow.ParentInfo | None
) -> str | None:
    """Why a turn at `workflow_id`, started by the workflow `parent` (None: by a client), may not
    run `request` (one sentence), or None when it may."""
    return _id_problem(workflow_id, parent) or _parent_problem(request, parent)


def _id_problem(workflow_id: str, parent: workflow.ParentInfo | None) -> str | None:
    prefixed = runtime_prefixed(workflow_id)
    if prefixed is not None:
        return f"id {workflow_id!r} is reserved: {prefixed}"
    # A nested id is the runtime's child turn: the workflow named before the last '/' starts it.
    under = f"{parent.workflow_id}{NESTED_ID_SEPARATOR}" if parent is not None else None
    own = workflow_id.removeprefix(under) if under and workflow_id.startswith(under) else None
    if NESTED_ID_SEPARATOR in (workflow_id if own is None else own):
        return (
            f"id {workflow_id!r} is reserved: ids with '/' belong to the runtime's sub-agent "
            f"and session turns, which the workflow named before the '/' starts"
        )
    return None


def _parent_problem(request: TurnRequest, parent: workflow.ParentInfo | None) -> str | None:
    claimed = request.parent
    if claimed is None:
        return None
    if parent is None:
        return (
            f"parent: is set by the runtime on the turns a sub-agent call starts; this turn was "
            f"started by a client, not by {claimed.workflow_id!r} (leave parent out)"
        )
    if parent.workflow_id != claimed.workflow_id:
        return (
            f"parent: names {claimed.workflow_id!r}, but {parent.workflow_id!r} started this "
            f"turn; parent is set by the runtime"
        )
    return None
