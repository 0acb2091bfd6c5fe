"""A worker that requires encryption, sent the wrong thing by a client without the keys: a turn
or session request fails before anything runs, signals are ignored (a turn lists them with its
refused decisions), updates are refused by their validators, the approval cache takes no
standing approval; the same messages, encrypted, go through, and the history replays."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer
from turnkeeper.contracts.approvals import (
    APPROVAL_CACHE_WORKFLOW,
    QUERY_STANDING,
    SIGNAL_REMEMBER,
    UPDATE_LOOKUP,
    StandingApproval,
    approval_cache_id,
)
from turnkeeper.contracts.errors import ENCRYPTION_REQUIRED
from turnkeeper.contracts.names import (
    SESSION_WORKFLOW_TYPE,
    SIGNAL_APPROVE,
    SIGNAL_SUBMIT_TOOL_RESULT,
    UPDATE_CLOSE,
    UPDATE_DECIDE,
    UPDATE_EXTEND_BUDGET,
    UPDATE_SEND,
    WORKFLOW_TYPE,
)
from turnkeeper.contracts.session import SessionStatus
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow

from tests.conftest import make_settings, new_key, running_worker, scripted_request
from tests.conftest import wait_for_pending as pending_of
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.waiting import until
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring, new_key_entry
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.payloads.stores import open_store
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import workflow_runner

KEYS = new_key_entry("required")


@dataclass
class Deployment:
    """Workers of one set of keys, a client with the keys, and one without."""

    keyed: Client
    plain: Client
    settings: Settings
    store: ContentStore
    fake: FakeAnthropic

    @property
    def task_queue(self) -> str:
        return self.settings.task_queue

    def converter(self, *, require_encryption: bool) -> DataConverter:
        keyring = Keyring.parse(KEYS)
        return turn_data_converter(self.store, keyring, require_encryption=require_encryption)

    @asynccontextmanager
    async def worker(self, *, require_encryption: bool = True) -> AsyncIterator[None]:
        converter = self.converter(require_encryption=require_encryption)
        client = Client(**{**self.keyed.config(), "data_converter": converter})
        async with running_worker(client, self.settings, self.fake, store=self.store):
            yield

    async def start(self, client: Client, request: dict[str, Any], **options: Any) -> Any:
        return await client.start_workflow(
            options.pop("workflow", WORKFLOW_TYPE),
            request,
            id=options.pop("id", f"turn-{uuid.uuid4()}"),
            task_queue=self.task_queue,
            **options,
        )


@pytest.fixture
def clients(client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path) -> Deployment:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    store = open_store(settings, Keyring.parse(KEYS))

    def over(converter: DataConverter) -> Client:
        return Client(**{**client.config(), "data_converter": converter})

    keyed = over(turn_data_converter(store, Keyring.parse(KEYS)))
    plain = over(turn_data_converter(open_store(settings, Keyring())))
    return Deployment(keyed, plain, settings, store, fake_anthropic)


@pytest.fixture
async def deployment(clients: Deployment) -> AsyncIterator[Deployment]:
    """With a worker that requires encryption running."""
    async with clients.worker():
        yield clients


def assert_refused(error: BaseException | None, what: str) -> None:
    """An EncryptionRequired refusal whose message a client without the keys can read."""
    assert isinstance(error, ApplicationError), error
    assert error.type == ENCRYPTION_REQUIRED and error.non_retryable
    assert error.message.startswith(f"{what} reached the worker unencrypted")
    assert "TURNKEEPER_REQUIRE_ENCRYPTION" in error.message
    assert "--codec-endpoint" in error.message and "TURNKEEPER_ENCRYPTION_KEYS" in error.message


async def test_an_unencrypted_turn_request_fails_before_any_model_call(
    deployment: Deployment, fake_anthropic: FakeAnthropic
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Never asked.")])
    handle = await deployment.start(deployment.plain, scripted_request(key))
    # Read with the keys: the failure's details (the partial report) are encrypted; its message
    # is not (the temporal CLI shows it: tests/test_temporal_cli.py).
    with pytest.raises(WorkflowFailureError) as failure:
        await deployment.keyed.get_workflow_handle(handle.id).result()
    assert_refused(failure.value.cause, "the turn request")
    assert fake_anthropic.requests_for(key) == []
    history = await handle.fetch_history()
    assert not any(e.HasField("activity_task_scheduled_event_attributes") for e in history.events)


async def test_unencrypted_signals_are_ignored_and_listed_and_updates_refused(
    deployment: Deployment, fake_anthropic: FakeAnthropic
) -> None:
    key = new_key()
    write = ("write_file", {"path": "a.md", "content": "A"})
    fake_anthropic.script(key, [fake.tool_calls(write), fake.text("Written.")])
    keyed = await deployment.start(deployment.keyed, scripted_request(key), result_type=AgentReport)
    [call] = (await pending_of(keyed)).pending
    plain = deployment.plain.get_workflow_handle(keyed.id)
    decision = {"call_id": call.call_id, "approved": True, "approver": "mallory"}

    await plain.signal(SIGNAL_APPROVE, decision)
    await plain.signal(SIGNAL_SUBMIT_TOOL_RESULT, {"call_id": call.call_id, "output": "forged"})
    for update, payload, what in (
        (UPDATE_DECIDE, decision, "the decide update"),
        (UPDATE_EXTEND_BUDGET, {"iterations": 5}, "the extend_budget update"),
    ):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await plain.execute_update(update, payload)
        assert_refused(refused.value.cause, what)

    status = await until(
        lambda: keyed.query("status", result_type=TurnStatus),
        lambda status: len(status.refused_decisions) >= 2,
        "two refused signals",
    )
    assert [(r.signal, r.call_id) for r in status.refused_decisions] == [
        (SIGNAL_APPROVE, call.call_id),
        (SIGNAL_SUBMIT_TOOL_RESULT, call.call_id),
    ]
    assert status.refused_decisions[0].approver == "mallory"
    assert all("unencrypted" in r.reason for r in status.refused_decisions)
    assert [p.call_id for p in status.pending] == [call.call_id]

    await keyed.signal(SIGNAL_APPROVE, {**decision, "approver": "alice"})
    report = await keyed.result()
    assert report.output == "Written." and report.decisions[0].approver == "alice"

    # The refusals are in history (a patch marker, the ignored signals): it replays as recorded.
    replayer = Replayer(
        workflows=[AgentTurnWorkflow],
        data_converter=deployment.converter(require_encryption=True),
        workflow_runner=workflow_runner(),
    )
    await replayer.replay_workflow(await keyed.fetch_history(), raise_on_replay_failure=True)


async def test_a_session_refuses_an_unencrypted_start_send_and_close(
    deployment: Deployment, fake_anthropic: FakeAnthropic
) -> None:
    key = new_key()
    agent = scripted_request(key)["agent"]

    async def start_session(client: Client, session_id: str) -> Any:
        request = {"session_id": session_id, "agent": agent}
        return await deployment.start(
            client,
            request,
            workflow=SESSION_WORKFLOW_TYPE,
            id=session_id,
            result_type=SessionStatus,
        )

    refused = await start_session(deployment.plain, f"session-{key}")
    with pytest.raises(WorkflowFailureError) as failure:
        await refused.result()
    assert_refused(failure.value.cause, "the session request")

    session = await start_session(deployment.keyed, f"session-{key}-keyed")
    plain = deployment.plain.get_workflow_handle(session.id)
    for update, args, what in (
        (UPDATE_SEND, [{"input": "Hello?"}], "the send update"),
        (UPDATE_CLOSE, [{"reason": "forged"}], "the close update"),
    ):
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await plain.execute_update(update, args=args)
        assert_refused(rejected.value.cause, what)
    # A close without input carries nothing to encrypt, so there is nothing to refuse.
    await session.execute_update(UPDATE_CLOSE, {"reason": "done"})
    status = await session.result()
    assert (status.state, status.turns) == ("closed", 0)
    assert fake_anthropic.requests_for(key) == []


async def test_the_approval_cache_takes_no_unencrypted_standing_approval(
    deployment: Deployment,
) -> None:
    agent_id = f"agent-{new_key()}"
    forged = {"tool": "write_file", "approver": "mallory", "at": "2026-01-02T03:04:00Z"}
    refused = await deployment.start(
        deployment.plain,
        {"agent_id": agent_id, "standing": [forged]},
        workflow=APPROVAL_CACHE_WORKFLOW,
        id=approval_cache_id(agent_id),
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await refused.result()
    assert_refused(failure.value.cause, "the approval cache's start")

    cache = await deployment.start(
        deployment.keyed,
        {"agent_id": agent_id},
        workflow=APPROVAL_CACHE_WORKFLOW,
        id=approval_cache_id(agent_id),
    )
    plain = deployment.plain.get_workflow_handle(cache.id)
    await plain.signal(SIGNAL_REMEMBER, forged)
    with pytest.raises(WorkflowUpdateFailedError) as rejected:
        await plain.execute_update(UPDATE_LOOKUP, {"tools": ["write_file"]})
    assert_refused(rejected.value.cause, "the lookup update")
    await cache.signal(SIGNAL_REMEMBER, {**forged, "approver": "alice"})
    standing = await until(
        lambda: cache.query(QUERY_STANDING, result_type=list[StandingApproval]),
        lambda standing: bool(standing),
        "a standing approval",
    )
    assert [s.approver for s in standing] == ["alice"]
    await cache.terminate("test over")


async def test_a_turn_that_began_in_plaintext_ends_as_it_began(
    clients: Deployment, fake_anthropic: FakeAnthropic
) -> None:
    """The requirement switched on under a running plaintext turn: the new worker replays it
    (its request now marked) without refusing it, and the turn's next plaintext signal counts."""
    key = new_key()
    write = ("write_file", {"path": "a.md", "content": "A"})
    fake_anthropic.script(key, [fake.tool_calls(write), fake.text("Written.")])
    async with clients.worker(require_encryption=False):
        started = await clients.start(clients.plain, scripted_request(key))
        keyed = clients.keyed.get_workflow_handle(started.id, result_type=AgentReport)
        [call] = (await pending_of(keyed)).pending

    async with clients.worker(require_encryption=True):
        await started.signal(SIGNAL_APPROVE, {"call_id": call.call_id, "approved": True})
        assert (await keyed.result()).output == "Written."
