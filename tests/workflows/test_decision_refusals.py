"""What a Temporal client in any language sees when a turn refuses an update: the validator's
`ApplicationError` of type `DecisionRefused` (not Python's `ValueError`), its message saying why,
and nothing written to history."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.errors import DECISION_REFUSED
from turnkeeper.contracts.names import UPDATE_DECIDE, UPDATE_STEER

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake


async def refusal(handle: WorkflowHandle, update: str, payload: Any) -> ApplicationError:
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await handle.execute_update(update, payload)
    assert isinstance(failed.value.cause, ApplicationError)
    return failed.value.cause


async def test_an_update_the_turn_cannot_apply_fails_as_decision_refused(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [fake.tool_calls(("write_file", {"path": "out.md", "content": "x"})), fake.text("done")],
    )
    request = scripted_request(key)
    request["agent"]["approvers"] = ["alice"]
    handle = await turns.start(request)
    [pending] = (await wait_for_pending(handle)).pending

    unknown = await refusal(handle, UPDATE_DECIDE, {"call_id": "toolu_nope", "approved": True})
    stranger = await refusal(
        handle, UPDATE_DECIDE, {"call_id": pending.call_id, "approved": True, "approver": "eve"}
    )
    malformed = await refusal(handle, UPDATE_DECIDE, {"approved": True})
    blank = await refusal(handle, UPDATE_STEER, {"message": " ", "author": "alice"})
    decide = {"call_id": pending.call_id, "approved": True, "approver": "alice"}
    await handle.execute_update(UPDATE_DECIDE, decide)
    report = await handle.result()

    refusals = [unknown, stranger, malformed, blank]
    assert [r.type for r in refusals] == [DECISION_REFUSED] * 4
    assert all(r.non_retryable for r in refusals)
    assert "toolu_nope" in unknown.message and "'eve'" in stranger.message
    assert malformed.message.startswith("invalid decision") and "call_id" in malformed.message
    assert report.output == "done" and [d.approver for d in report.decisions] == ["alice"]
    accepted = [
        event
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert len(accepted) == 1  # only the decision that applied
