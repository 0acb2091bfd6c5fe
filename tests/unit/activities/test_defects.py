"""A defect of ours inside an activity is a TurnInternalError at once; the failures of the world
(a store that cannot be reached) keep Temporal's retries."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog.testing
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.defects import defects_fail_once
from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool
from turnkeeper.activities.tools.tool_activity import ToolActivities
from turnkeeper.contracts.activity_io import ToolCallInput
from turnkeeper.contracts.errors import TURN_INTERNAL_ERROR

from turnkeeper.payloads.content_store import LocalFolderStore


class _StoreFailingWith(LocalFolderStore):
    def __init__(self, root: Path, error: Exception) -> None:
        super().__init__(root)
        self._error = error

    async def put(self, data: bytes) -> str:
        raise self._error


@worker_tool(name="echo")
async def _echo(text: str) -> str:
    """Echo the text."""
    return text


def _call() -> ToolCallInput:
    return ToolCallInput(turn_id="t", call_id="toolu_1", tool="echo", input={"text": "secret"})


async def test_a_defect_in_the_tool_activity_fails_the_call_once_typed(tmp_path: Path) -> None:
    store = _StoreFailingWith(tmp_path, TypeError("unsupported operand type(s) for +: 'int'"))
    activities = ToolActivities(ToolRegistry([_echo]), store)

    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activities.tool_call, _call())

    assert raised.value.type == TURN_INTERNAL_ERROR
    assert raised.value.non_retryable
    assert "tool_call activity: TypeError: unsupported operand" in raised.value.message
    assert "secret" not in raised.value.message  # the call's content never enters the message


async def test_a_store_outage_in_the_tool_activity_is_left_to_retries(tmp_path: Path) -> None:
    store = _StoreFailingWith(tmp_path, ConnectionRefusedError("store down"))
    activities = ToolActivities(ToolRegistry([_echo]), store)

    with pytest.raises(ConnectionRefusedError):
        await ActivityEnvironment().run(activities.tool_call, _call())


@pytest.mark.parametrize(
    "defect", [KeyError("input_tokens"), AttributeError("x"), IndexError("list"), ValueError("v")]
)
def test_every_defect_type_becomes_a_turn_internal_error(defect: Exception) -> None:
    with pytest.raises(ApplicationError) as raised, defects_fail_once("model_call"):
        raise defect
    assert raised.value.type == TURN_INTERNAL_ERROR
    assert type(defect).__name__ in raised.value.message


@pytest.mark.parametrize(
    "outage", [OSError("reset"), TimeoutError(), ApplicationError("x", type="LLMTransient")]
)
def test_outages_and_typed_failures_pass_through(outage: Exception) -> None:
    with pytest.raises(type(outage)), defects_fail_once("model_call"):
        raise outage


def test_a_long_exception_text_is_cut() -> None:
    with pytest.raises(ApplicationError) as raised, defects_fail_once("model_call"):
        raise TypeError("x" * 5000)
    assert len(raised.value.message) < 400


def test_the_log_line_says_where_the_defect_is_and_quotes_nothing() -> None:
    logs = structlog.testing.capture_logs()
    with logs as captured, pytest.raises(ApplicationError), defects_fail_once("model_call"):
        raise ValueError("input_value='the user wrote this'")
    (line,) = [entry for entry in captured if entry["event"] == "activity_defect"]
    assert line["error_type"] == "ValueError"
    assert line["raised_at"].startswith(f"{Path(__file__).name}:")
    assert "the user wrote this" not in repr(line)
