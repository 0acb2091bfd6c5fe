"""A provider key echoed in an error body reaches no log line, span or history (issue 29, 1).

A provider, gateway or proxy that answers 401 with "invalid x-api-key: sk-…" puts the worker's
key in the error body. The attacker here reads what operators routinely ship elsewhere: the
worker's log (JSON lines, plaintext even with payload encryption on), its exported spans, and
the turn's history (anyone with read access to the namespace). None of them may hold the key, or
any prefix of it long enough to narrow a search (8 characters and up), whether the body quotes
it whole or the 300-character cut of the provider's message falls inside it.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.fakes import openai_replies
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.test_approvals_and_budgets import start, turn_request

# The shortest prefix of a key the test looks for: shorter ones (`sk-ant-`) name only the vendor.
SHORTEST_PREFIX = 8
# Where the providers cut the API's message (`_API_MESSAGE_LIMIT`).
MESSAGE_CUT = 300
# Spans go to the worker's stdout, which the stack writes into the worker's log file.
CONSOLE_SPANS = {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "50"}


def a_key(vendor: str) -> str:
    return f"sk-{vendor}-api03-{secrets.token_urlsafe(40)}"


def echoing(key: str, how: str) -> str:
    """A 401's message quoting `key`: whole, starting just before the providers' 300-character
    cut, or cut short by the gateway itself (its first 20 characters)."""
    if how == "whole":
        return f"invalid x-api-key: {key}"
    if how == "cut-short":
        return f"invalid x-api-key: {key[:20]}… (see the gateway's log)"
    lead = "invalid x-api-key (gateway trace follows) "
    filler = "x" * (MESSAGE_CUT - len(lead) - SHORTEST_PREFIX * 2)
    return f"{lead}{filler} {key}"


ECHOES = ["whole", "at-the-cut", "cut-short"]


def leaks(text: str, key: str) -> list[str]:
    """The prefixes of `key` (8 characters and up, the whole key included) found in `text`."""
    return [key[:n] for n in range(SHORTEST_PREFIX, len(key) + 1) if key[:n] in text]


async def failed_turn(stack: SystemStack, workflow_id: str) -> dict[str, Any]:
    async def describe() -> dict[str, Any]:
        return await stack.temporal("workflow", "describe", "--workflow-id", workflow_id)

    await until(
        describe,
        lambda seen: seen["workflowExecutionInfo"]["status"] != "WORKFLOW_EXECUTION_STATUS_RUNNING",
        f"{workflow_id} to end",
    )
    return await stack.temporal("workflow", "show", "--workflow-id", workflow_id)


def failure_messages(history: dict[str, Any]) -> list[str]:
    """Every message of the turn's failure and its `cause` chain, as the history holds them."""
    [failed] = [e for e in history["events"] if "workflowExecutionFailedEventAttributes" in e]
    messages, failure = [], failed["workflowExecutionFailedEventAttributes"]["failure"]
    while failure:
        messages.append(failure.get("message", ""))
        failure = failure.get("cause")
    return messages


async def check_no_leak(
    stack: SystemStack, worker: WorkerProcess, workflow_id: str, key: str
) -> None:
    # The console exporter prints the failed calls' spans, whose stack traces are expected here.
    worker.allowed_errors.append('"exception.stacktrace"')
    history = await failed_turn(stack, workflow_id)
    assert "LLMAuthError" in json.dumps(history)  # the turn failed on the 401, not elsewhere
    # Stopping the worker exports the spans still buffered.
    assert worker.stop() == 0
    messages = failure_messages(history)
    assert leaks(json.dumps(history), key) == [], messages
    # The provider's words still reach whoever reads the failure, less the key.
    assert any("invalid x-api-key" in m and "[redacted]" in m for m in messages), messages
    log = worker.log_path.read_text(errors="replace")
    # Each channel held the failure, so its absence of the key means something.
    assert worker.events("Completing activity as failed")
    for span in ('"name": "model_call ', '"name": "turn '):
        assert span in log, f"the console exporter wrote no {span} span"
    assert leaks(log, key) == []


@pytest.mark.parametrize("how", ECHOES)
async def test_an_anthropic_key_echoed_in_a_401_leaks_nowhere(stack: SystemStack, how: str) -> None:
    key = a_key("ant")
    script = new_key()
    stack.fake.script(script, [fake.error(401, "authentication_error", echoing(key, how))])
    worker = await stack.start_worker(env={"ANTHROPIC_API_KEY": key, **CONSOLE_SPANS})
    workflow_id = await start(stack, worker, turn_request(script))

    await check_no_leak(stack, worker, workflow_id, key)
    [received] = stack.fake.requests_for(script)
    # The key the fake echoed is the one the worker sent (SDK 2.x sends it as a bearer token).
    headers = received.headers
    assert headers.get("x-api-key", headers.get("authorization", "").removeprefix("Bearer ")) == key


@pytest.mark.parametrize("how", ECHOES)
async def test_an_openai_key_echoed_in_a_401_leaks_nowhere(
    stack: SystemStack, fake_openai: FakeOpenAI, how: str
) -> None:
    key = a_key("proj")
    script = new_key()
    reply = openai_replies.chat_error(
        401, "invalid_request_error", "invalid_api_key", echoing(key, how)
    )
    fake_openai.script(script, [reply])
    worker = await stack.start_worker(
        env={
            "OPENAI_API_KEY": key,
            "OPENAI_BASE_URL": f"{fake_openai.base_url}/v1",
            **CONSOLE_SPANS,
        }
    )
    request = turn_request(script)
    request["agent"]["model"] = "openai:gpt-4.1"
    workflow_id = await start(stack, worker, request)

    await check_no_leak(stack, worker, workflow_id, key)
    [received] = fake_openai.requests_for(script)
    assert received.headers["authorization"] == f"Bearer {key}"
