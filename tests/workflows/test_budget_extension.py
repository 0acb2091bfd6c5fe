"""Budgets a human can extend: with `on_budget_exhausted: "pause"` a spent budget stops the turn
in state `awaiting_budget` until `extend_budget` adds to it; bad extensions are refused by the
update's validator while the turn keeps waiting; no extension in time fails the turn as before."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.budget_extension import ExtendBudgetInput, ExtendBudgetResult
from turnkeeper.contracts.decision_signing import public_key_line
from turnkeeper.contracts.names import QUERY_STATUS, UPDATE_EXTEND_BUDGET, WORKFLOW_TYPE
from turnkeeper.contracts.search_attributes import TURN_STATE
from turnkeeper.contracts.signals import ApproveInput, SignedCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import (
    TurnRunner,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
    wait_for_pending,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until
from tests.workflows.test_continue_as_new import eager_env, run_ids  # noqa: F401 (a fixture)

LIST = ("list_files", {"path": "."})
PRICEY = {"input_per_mtok": 10_000.0, "output_per_mtok": 100_000.0}  # $0.01 / $0.1 a token
USAGE = {"input_tokens": 20, "output_tokens": 3}  # $0.50 a call at PRICEY


def pausing(key: str, constraints: dict[str, Any], **agent: Any) -> dict[str, Any]:
    return scripted_request(
        key,
        agent=agent,
        task={"constraints": {"on_budget_exhausted": "pause", **constraints}},
    )


async def wait_for_budget_request(handle: WorkflowHandle) -> TurnStatus:
    return await until(
        lambda: handle.query(QUERY_STATUS, result_type=TurnStatus),
        lambda status: status.budget_request is not None,
        "the turn asks for a budget extension",
    )


async def extend(handle: WorkflowHandle, payload: dict[str, Any]) -> ExtendBudgetResult:
    return await handle.execute_update(
        UPDATE_EXTEND_BUDGET, payload, result_type=ExtendBudgetResult
    )


async def refusal(handle: WorkflowHandle, payload: dict[str, Any]) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await extend(handle, payload)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    return cause.message


async def test_a_spent_cost_budget_waits_for_an_extension_then_completes(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST, usage=USAGE), fake.text("Done.", usage=USAGE)])
    handle = await turns.start(pausing(key, {"cost_budget_usd": 0.4}, price=PRICEY))

    status = await wait_for_budget_request(handle)

    assert status.state == "awaiting_budget"
    request = status.budget_request
    assert request is not None and (request.number, request.budget) == (1, "cost")
    assert request.message.startswith("cost budget of $0.4 spent: $0.500000 so far")
    description = await handle.describe()
    assert description.typed_search_attributes.get(TURN_STATE) == "awaiting_budget"
    details = await _current_details(handle)
    assert f"turnkeeper extend {handle.id} --cost-usd 1" in details
    assert f"temporal workflow update execute --workflow-id {handle.id}" in details
    assert len(turns.fake.requests_for(key)) == 1

    result = await extend(handle, {"cost_usd": 1, "approver": "alice", "reason": "worth it"})

    assert result.limits.cost_budget_usd == pytest.approx(1.4)
    assert (result.extension.approver, result.extension.reason) == ("alice", "worth it")
    report: AgentReport = await handle.result()
    assert report.output == "Done."
    assert report.cost_usd == pytest.approx(1.0)
    [extension] = report.budget_extensions
    assert (extension.request, extension.budget, extension.cost_usd) == (1, "cost", 1.0)
    final = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert final.state == "completed" and final.budget_request is None


async def test_a_call_refused_for_its_input_cost_is_made_once_extended(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.tool_calls(LIST, usage={"input_tokens": 90, "output_tokens": 0}),
            fake.text("Done.", usage={"input_tokens": 90, "output_tokens": 0}),
        ],
    )
    price = {"input_per_mtok": 10_000.0, "output_per_mtok": 0.0}  # $0.01 an input token
    handle = await turns.start(pausing(key, {"cost_budget_usd": 1.0}, price=price))

    status = await wait_for_budget_request(handle)
    request = status.budget_request
    assert request is not None and request.budget == "cost"
    assert "model call 2 was not made: its input alone" in request.message
    assert len(turns.fake.requests_for(key)) == 1  # the refused call never reached the API
    await extend(handle, {"cost_usd": 2})

    report: AgentReport = await handle.result()
    assert report.output == "Done."
    assert report.cost_usd == pytest.approx(1.8)


async def test_a_call_cut_off_by_the_time_budget_is_made_again_once_extended(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.slow(fake.tool_calls(LIST), 0.5),
            # Cut off by the budget whatever the machine's speed; answered once extended.
            [fake.slow(fake.tool_calls(LIST), 30), fake.text("Made it.")],
        ],
    )
    # Room for the first call, a tool call and the workflow tasks between, on a slow machine.
    handle = await turns.start(pausing(key, {"time_budget_ms": 5000}))

    status = await wait_for_budget_request(handle)
    assert status.budget_request is not None and status.budget_request.budget == "time"
    assert status.budget_request.message.startswith("time budget of 5000 ms spent: ")
    result = await extend(handle, {"time_ms": 30_000})

    assert result.limits.time_budget_ms == 35_000
    report: AgentReport = await handle.result()
    assert report.output == "Made it."
    # The call that ran out of time was made again after the extension, not retried before.
    assert [r.attempt for r in turns.fake.requests_for(key)] == [0, 0, 1]


async def test_spent_iterations_wait_for_more(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST), fake.tool_calls(LIST), fake.text("Found it.")])
    handle = await turns.start(pausing(key, {}, max_iterations=1))

    status = await wait_for_budget_request(handle)
    assert status.budget_request is not None
    assert status.budget_request.budget == "iterations"
    assert "reached max_iterations=1" in status.budget_request.message

    await extend(handle, {"iterations": 1})
    second = await wait_for_budget_request(handle)
    assert second.budget_request is not None and second.budget_request.number == 2
    assert "reached max_iterations=2" in second.budget_request.message
    await extend(handle, {"iterations": 5, "reason": "almost there"})

    report: AgentReport = await handle.result()
    assert (report.output, report.iterations, report.tool_calls) == ("Found it.", 3, 2)
    assert [e.iterations for e in report.budget_extensions] == [1, 5]


async def test_a_spent_tool_interaction_budget_waits_before_the_model_loses_its_tools(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST), fake.tool_calls(LIST), fake.text("Done.")])
    handle = await turns.start(pausing(key, {"max_tool_interactions": 1}))

    status = await wait_for_budget_request(handle)
    assert status.budget_request is not None
    assert status.budget_request.budget == "tool_interactions"
    assert len(turns.fake.requests_for(key)) == 1
    await extend(handle, {"tool_interactions": 2})

    report: AgentReport = await handle.result()
    assert report.tool_calls == 2
    # Without the extension the second call would have had no tools (test_budgets.py).
    requests = turns.fake.requests_for(key)
    assert [("tools" in r.body) for r in requests] == [True, True, True]


async def test_the_validator_refuses_every_bad_extension_and_the_turn_keeps_waiting(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST, usage=USAGE), fake.text("Done.", usage=USAGE)])
    request = pausing(key, {"cost_budget_usd": 0.4}, price=PRICEY, approvers=["alice", "bob"])
    handle = await turns.start(request)
    await wait_for_budget_request(handle)

    assert "at least one positive amount" in await refusal(handle, {"approver": "alice"})
    assert "cost_usd" in await refusal(handle, {"cost_usd": 0, "approver": "alice"})
    assert "cost_usd" in await refusal(handle, {"cost_usd": -1, "approver": "alice"})
    assert "iterations" in await refusal(handle, {"iterations": 0, "approver": "alice"})
    assert "extra" in (await refusal(handle, {"cost_usd": 1, "dollars": 1})).lower()
    assert "cost_usd" in await refusal(handle, {"cost_usd": "a lot", "approver": "alice"})
    assert "cost_usd" in await refusal(handle, {"cost_usd": "1", "approver": "alice"})
    assert "iterations" in await refusal(handle, {"iterations": True, "approver": "alice"})
    assert "time_ms" in await refusal(handle, {"time_ms": 1.5, "approver": "alice"})
    waits_for_cost = await refusal(handle, {"iterations": 3, "approver": "alice"})
    assert "waits for more cost (cost_usd); this extension adds none" in waits_for_cost
    unlimited = await refusal(handle, {"cost_usd": 1, "time_ms": 5000, "approver": "alice"})
    assert "time_ms: the turn's time is unlimited" in unlimited
    outsider = await refusal(handle, {"cost_usd": 1, "approver": "mallory"})
    assert "'mallory' may not extend budgets of this agent (approvers: alice, bob)" in outsider
    assert "anonymous" in await refusal(handle, {"cost_usd": 1})

    status = await handle.query(QUERY_STATUS, result_type=TurnStatus)
    assert status.state == "awaiting_budget" and status.budget_extensions == []
    await extend(handle, {"cost_usd": 1, "approver": "bob"})
    await handle.result()
    with pytest.raises(RPCError, match="already completed"):
        await extend(handle, {"cost_usd": 1, "approver": "bob"})


async def test_an_extension_while_nothing_waits_is_refused(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(("write_file", {"path": "a.md", "content": "A"}))])
    handle = await turns.start(pausing(key, {"cost_budget_usd": 5}))
    await wait_for_pending(handle)

    message = await refusal(handle, {"cost_usd": 1})

    assert message == "the turn is not waiting for a budget extension (state awaiting_approval)"
    await handle.terminate()


class Approver:
    def __init__(self, name: str) -> None:
        self.name = name
        self.key = Ed25519PrivateKey.generate()

    def entry(self) -> dict[str, str]:
        return {"name": self.name, "public_key": public_key_line(self.key)}

    def sign(
        self,
        payload: dict[str, Any],
        workflow_id: str,
        request: int,
        agent_id: str,
        run: str | None = "run-of-a-turn-elsewhere",
    ) -> dict[str, Any]:
        """Signs `payload` for budget request `request` of the turn `workflow_id` whose first
        run is `run`."""
        extension = ExtendBudgetInput.model_validate({"approver": self.name, **payload})
        expires = datetime.now(UTC) + timedelta(minutes=5)
        signed = extension.signed_with(
            self.key, workflow_id, agent_id, request, expires, first_run_id=run
        )
        return signed.model_dump(mode="json", exclude_none=True)


async def test_keyed_approvers_extend_only_with_a_signature_for_this_request(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST), fake.tool_calls(LIST), fake.text("Done.")])
    alice, mallory = Approver("alice"), Approver("mallory")
    agent = {"id": "keyed-agent", "max_iterations": 1, "approvers": [alice.entry(), "bob"]}
    handle = await turns.start(pausing(key, {}, **agent))
    await wait_for_budget_request(handle)
    wid, run, more = handle.id, handle.first_execution_run_id, {"iterations": 1}

    unsigned = await refusal(handle, {**more, "approver": "alice"})
    assert "the budget extension is not signed" in unsigned
    assert "'bob' has no public key" in await refusal(handle, {**more, "approver": "bob"})
    forged = mallory.sign(more, wid, 1, "keyed-agent", run) | {"approver": "alice"}
    assert "does not verify" in await refusal(handle, forged)
    other_turn = alice.sign(more, "turn-elsewhere", 1, "keyed-agent")
    assert "does not verify" in await refusal(handle, other_turn)
    other_request = alice.sign(more, wid, 2, "keyed-agent", run)
    assert "does not verify" in await refusal(handle, other_request)
    earlier_turn = alice.sign(more, wid, 1, "keyed-agent", "run-of-an-earlier-turn")
    assert "does not verify" in await refusal(handle, earlier_turn)
    other_request = alice.sign(more, wid, 2, "keyed-agent", run)
    assert "does not verify" in await refusal(handle, other_request)
    changed = alice.sign(more, wid, 1, "keyed-agent", run) | {"iterations": 50}
    assert "does not verify" in await refusal(handle, changed)
    # A decision's signature over the same words is of another kind: it never extends a budget.
    decision = ApproveInput(call_id="1", approved=True, approver="alice").signed_with(
        alice.key,
        SignedCall(wid, "keyed-agent", "*", first_run_id=run),
        datetime.now(UTC) + timedelta(minutes=5),
    )
    passed_off = {**more, "approver": "alice", "signature": decision.signature.model_dump()}
    assert "does not verify" in await refusal(handle, passed_off)

    first = alice.sign(more, wid, 1, "keyed-agent", run)
    result = await extend(handle, first)
    assert result.extension.signed
    await wait_for_budget_request(handle)
    # The signature of request 1 cannot answer request 2.
    assert "does not verify" in await refusal(handle, first)
    await extend(handle, alice.sign(more, wid, 2, "keyed-agent", run))

    report: AgentReport = await handle.result()
    assert report.output == "Done."
    assert [e.signed for e in report.budget_extensions] == [True, True]


def as_a_javascript_signer_signs(
    key: Ed25519PrivateKey, canonical: str, expires_at: str
) -> dict[str, str]:
    """The signature a JavaScript or Go client makes by the README: the context line, then the
    fields and expiry in JCS (`canonical`, written out as `JSON.stringify` writes them)."""
    value = key.sign(b"turnkeeper-budget-extension-v3\n" + canonical.encode())
    return {"expires_at": expires_at, "value": base64.b64encode(value).decode()}


async def test_a_signed_extension_of_whole_dollars_from_another_language_verifies(
    turns: TurnRunner,
) -> None:
    # Python signed `"cost_usd":5.0`, which no JavaScript or Go encoder writes, so their
    # signatures of a whole-dollar extension never verified.
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(LIST, usage=USAGE), fake.text("Done.", usage=USAGE)])
    alice = Approver("alice")
    agent = {"id": "keyed-agent", "price": PRICEY, "approvers": [alice.entry()]}
    handle = await turns.start(pausing(key, {"cost_budget_usd": 0.4}, **agent))
    await wait_for_budget_request(handle)
    expires_at = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    canonical = (
        '{"agent_id":"keyed-agent","approver":"alice","cost_usd":5,'
        f'"expires_at":"{expires_at}","first_run_id":"{handle.first_execution_run_id}",'
        '"iterations":null,"reason":"","request":1,'
        f'"time_ms":null,"tool_interactions":null,"workflow_id":"{handle.id}"}}'
    )
    signature = as_a_javascript_signer_signs(alice.key, canonical, expires_at)

    result = await extend(handle, {"cost_usd": 5, "approver": "alice", "signature": signature})
    report: AgentReport = await handle.result()

    assert (result.extension.cost_usd, result.extension.signed) == (5, True)
    assert report.output == "Done."


async def test_no_extension_in_time_fails_typed_with_the_partial_report(
    skipping_env: WorkflowEnvironment, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(LIST, usage=USAGE), fake.text("never reached", usage=USAGE)]
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    request = pausing(key, {"cost_budget_usd": 0.4, "approval_timeout_s": 3600}, price=PRICEY)

    client = skipping_env.client
    async with running_worker(client, settings, fake_anthropic):
        handle = await client.start_workflow(
            WORKFLOW_TYPE, request, id=f"turn-{uuid.uuid4()}", task_queue=settings.task_queue
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()

    error = failure.value.cause
    assert isinstance(error, ApplicationError) and error.non_retryable
    assert error.type == "TurnBudgetExceeded"
    assert error.message.startswith("cost budget of $0.4 spent: $0.500000 so far")
    assert error.message.endswith("; no budget extension came within 3600 s")
    partial = AgentReport.model_validate(error.details[0])
    assert (partial.outcome, partial.llm_calls, partial.tool_calls) == ("failed", 1, 1)
    assert partial.cost_usd == pytest.approx(0.5)
    assert partial.duration_ms >= 3600 * 1000


async def _current_details(handle: WorkflowHandle) -> str:
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return metadata.current_details


async def test_extensions_carry_over_continue_as_new(
    eager_env: WorkflowEnvironment,  # noqa: F811
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
) -> None:
    key = new_key()
    fake_anthropic.script(
        key, [fake.tool_calls(LIST)] * 12 + [fake.text("Listed it twelve times.")]
    )
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    async with running_worker(eager_env.client, settings, fake_anthropic):
        handle = await eager_env.client.start_workflow(
            WORKFLOW_TYPE,
            pausing(key, {}, max_iterations=2),
            id=f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        await wait_for_budget_request(handle)
        await extend(handle, {"iterations": 11, "approver": "alice"})
        report: AgentReport = await handle.result()

    assert len(await run_ids(eager_env.client, handle.id)) >= 2
    assert (report.output, report.iterations) == ("Listed it twelve times.", 13)
    [extension] = report.budget_extensions
    assert extension.iterations == 11
