"""Worker tools as typed functions, and the `tool_call` activity that runs them."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
import structlog
from pydantic import BaseModel, Field
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.tools.registry import (
    ToolContext,
    ToolError,
    ToolRegistry,
    run_tool,
    worker_tool,
)
from turnkeeper.activities.tools.tool_activity import ToolActivities
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools
from turnkeeper.contracts.activity_io import ToolCallInput, ToolCallResult
from turnkeeper.contracts.messages import ToolResultBlock

from turnkeeper.payloads.content_store import LocalFolderStore


class Window(BaseModel):
    start: int
    end: int


@worker_tool(timeout_s=5)
def fetch_lines(
    path: Annotated[str, Field(description="The file to read.")],
    window: Window | None = None,
    title: bool = False,
    tags: list[str] | None = None,
) -> dict[str, Any]:
    """Fetch some lines of a file.

    Everything after the first paragraph is for humans only.
    """
    return {"path": path, "window": window, "title": title, "thread": threading.get_ident()}


@worker_tool(name="explode")
def explode() -> str:
    raise ValueError("boom")


@worker_tool(name="refuse")
async def refuse() -> str:
    raise ToolError("no, and here is why")


@worker_tool(name="slow", timeout_s=0.05)
async def slow() -> str:
    await asyncio.sleep(10)
    return "never"


@worker_tool(name="own_timeout")
async def own_timeout() -> str:
    raise TimeoutError("upstream took too long")


@dataclasses.dataclass
class Hold:
    """What the `held` tool waits on: the test watches the call for as long as it needs (for
    heartbeats, or to cancel it mid-run) instead of guessing how long a sleep covers that."""

    started: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    released: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


HOLD: list[Hold] = [Hold()]


@worker_tool(name="held")
async def held() -> str:
    HOLD[0].started.set()
    await HOLD[0].released.wait()
    return "done"


def test_the_schema_comes_from_the_type_hints() -> None:
    definition = fetch_lines.definition()
    assert definition.name == "fetch_lines"
    assert definition.description == "Fetch some lines of a file."
    schema = definition.input_schema
    assert schema["required"] == ["path"]
    assert schema["additionalProperties"] is False
    properties = schema["properties"]
    assert properties["path"] == {"type": "string", "description": "The file to read."}
    # A parameter called "title" keeps its name; pydantic's generated titles are gone.
    assert properties["title"] == {"type": "boolean", "default": False}
    assert properties["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert schema["$defs"]["Window"]["required"] == ["start", "end"]
    assert "title" not in schema and "title" not in schema["$defs"]["Window"]
    assert fetch_lines.timeout_s == 5 and fetch_lines.idempotent
    assert not fetch_lines.requires_approval


def test_a_parameter_the_model_cannot_fill_is_refused_at_definition() -> None:
    def variadic(*paths: str) -> str:
        return ""

    def untyped(path) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(TypeError, match="parameter 'paths' must be a keyword"):
        worker_tool(variadic)
    with pytest.raises(TypeError, match="parameter 'path' has no type hint"):
        worker_tool(untyped)


def test_the_registry_refuses_a_second_tool_of_the_same_name() -> None:
    registry = ToolRegistry([fetch_lines, explode])
    with pytest.raises(ValueError, match="'explode' is already registered"):
        registry.add(worker_tool(name="explode")(lambda: "shadow"))
    assert registry.get("explode") is explode
    assert registry.names() == ["explode", "fetch_lines"]
    assert "fetch_lines" in registry and "ask_user" not in registry
    assert registry.get("ask_user") is None
    names = [d.name for d in registry.definitions(["fetch_lines", "ask_user", "explode"])]
    assert names == ["fetch_lines", "explode"]


async def test_run_tool_validates_and_runs_sync_functions_in_a_thread() -> None:
    text = await run_tool(fetch_lines, {"path": "a.md", "window": {"start": 1, "end": 2}})
    result = json.loads(text)
    assert result["window"] == {"start": 1, "end": 2}
    assert result["thread"] != threading.get_ident()


async def test_run_tool_awaits_async_functions_and_answers_text() -> None:
    @worker_tool
    async def window(start: int = 0) -> Window:
        """A window."""
        return Window(start=start, end=start + 1)

    @worker_tool
    async def greet(name: str) -> str:
        """A greeting."""
        return f"hello {name}"

    assert await run_tool(window, {"start": 3}) == '{"start":3,"end":4}'
    assert await run_tool(greet, {"name": "ada"}) == "hello ada"


async def test_run_tool_explains_every_bad_argument() -> None:
    with pytest.raises(ToolError) as caught:
        await run_tool(fetch_lines, {"window": {"start": "x"}, "colour": "red"})
    assert str(caught.value) == (
        "invalid arguments for fetch_lines: argument 'path': field required; "
        "argument 'window.start': input should be a valid integer, unable to parse string as an "
        "integer; argument 'window.end': field required; "
        "unexpected argument 'colour' (expected: path, window, title, tags)"
    )


@pytest.fixture
def store(tmp_path: Path) -> LocalFolderStore:
    return LocalFolderStore(tmp_path / "store")


@pytest.fixture
def activities(tmp_path: Path, store: LocalFolderStore) -> ToolActivities:
    workspace = Workspace(tmp_path / "workspace")
    (workspace.root / "notes.md").write_text("remember the milk")
    registry = builtin_tools(workspace)
    for tool in (explode, refuse, slow, own_timeout, held):
        registry.add(tool)
    return ToolActivities(registry, store)


async def run_call(
    activities: ToolActivities, tool: str, env: ActivityEnvironment | None = None, **arguments: Any
) -> ToolCallResult:
    call = ToolCallInput(turn_id="turn-1", call_id=f"toolu_{tool}", tool=tool, input=arguments)
    return await (env or ActivityEnvironment()).run(activities.tool_call, call)


async def stored_block(store: LocalFolderStore, result: ToolCallResult) -> ToolResultBlock:
    return ToolResultBlock.model_validate_json(await store.get(result.block_ref))


async def test_a_tool_call_stores_its_result_block(
    activities: ToolActivities, store: LocalFolderStore
) -> None:
    with structlog.testing.capture_logs() as logs:
        result = await run_call(activities, "read_file", path="notes.md")
    assert (result.is_error, result.content) == (False, "remember the milk")
    assert await stored_block(store, result) == ToolResultBlock(
        tool_use_id="toolu_read_file", content="remember the milk", is_error=False
    )
    [event] = [log for log in logs if log["event"] == "tool_call"]
    assert event["tool"] == "read_file" and event["outcome"] == "ok"
    assert event["call_id"] == "toolu_read_file" and event["duration_ms"] >= 0
    assert "remember the milk" not in repr(logs) and "notes.md" not in repr(logs)


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("ask_user", {}, "unknown tool 'ask_user': this worker does not provide it"),
        ("refuse", {}, "no, and here is why"),
        ("read_file", {"path": "../x"}, "'../x' leads outside the workspace; use a path"),
        ("read_file", {}, "invalid arguments for read_file: argument 'path': field required"),
        ("explode", {}, "tool explode failed: ValueError: boom"),
        ("slow", {}, "tool slow timed out after 0.05 s"),
        ("own_timeout", {}, "tool own_timeout failed: TimeoutError: upstream took too long"),
    ],
)
async def test_a_failing_tool_call_is_an_error_result_not_an_exception(
    activities: ToolActivities,
    store: LocalFolderStore,
    tool: str,
    arguments: dict[str, Any],
    message: str,
) -> None:
    with structlog.testing.capture_logs() as logs:
        result = await run_call(activities, tool, **arguments)
    assert result.is_error
    assert result.content.startswith(message)
    block = await stored_block(store, result)
    assert block == ToolResultBlock(
        tool_use_id=f"toolu_{tool}", content=result.content, is_error=True
    )
    assert [log["outcome"] for log in logs if log["event"] == "tool_call"] == ["error"]


async def test_a_raising_tool_is_logged_with_its_traceback(activities: ToolActivities) -> None:
    with structlog.testing.capture_logs() as logs:
        await run_call(activities, "explode")
    [failure] = [log for log in logs if log["event"] == "tool_failed"]
    assert failure["tool"] == "explode" and failure["exc_info"] is True


async def test_cancelling_the_activity_cancels_the_tool(activities: ToolActivities) -> None:
    HOLD[0] = hold = Hold()
    env = ActivityEnvironment()
    running = asyncio.create_task(run_call(activities, "held", env))
    await asyncio.wait_for(hold.started.wait(), 30)
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_a_long_tool_call_heartbeats(activities: ToolActivities) -> None:
    HOLD[0] = hold = Hold()
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.2))
    beats: list[tuple[Any, ...]] = []

    def beat(*details: Any) -> None:
        beats.append(details)
        if len(beats) == 2:
            hold.released.set()  # two beats seen while the tool still runs: let it finish

    env.on_heartbeat = beat
    result = await asyncio.wait_for(run_call(activities, "held", env), 30)
    assert result.content == "done"
    assert len(beats) >= 2


# ---- the call's context and idempotency key -----------------------------------------------


@worker_tool(name="charge", idempotent=False, priority=5)
def charge(amount: int, context: ToolContext) -> str:
    """Charge a card once, whatever happens to the worker."""
    CHARGES.append((context.idempotency_key, context.attempt, amount))
    return f"charged {amount}"


CHARGES: list[tuple[str, int, int]] = []


def test_the_tool_context_is_no_argument_of_the_model() -> None:
    schema = charge.input_schema()
    assert list(schema["properties"]) == ["amount"] and schema["required"] == ["amount"]
    assert charge.context_parameter == "context"
    assert (charge.priority, charge.idempotent) == (5, False)
    assert fetch_lines.priority == 0 and fetch_lines.context_parameter is None


async def test_run_tool_hands_the_context_to_the_tool() -> None:
    CHARGES.clear()
    context = ToolContext(turn_id="turn-7", call_id="toolu_1", attempt=2)
    assert await run_tool(charge, {"amount": 3}, context) == "charged 3"
    assert CHARGES == [("turn-7/toolu_1", 2, 3)]
    with pytest.raises(ToolError, match="unexpected argument 'context'"):
        await run_tool(charge, {"amount": 3, "context": {}}, context)
    with pytest.raises(TypeError, match="takes a ToolContext"):
        await run_tool(charge, {"amount": 3})


async def test_the_idempotency_key_is_the_same_on_every_attempt(tmp_path: Path) -> None:
    CHARGES.clear()
    activities = ToolActivities(ToolRegistry([charge]), LocalFolderStore(tmp_path / "store"))
    call = ToolCallInput(turn_id="turn-9", call_id="toolu_c", tool="charge", input={"amount": 4})
    for attempt in (1, 2):
        env = ActivityEnvironment()
        env.info = dataclasses.replace(env.info, attempt=attempt)
        await env.run(activities.tool_call, call)
    assert [(call.idempotency_key, 1, 4), (call.idempotency_key, 2, 4)] == CHARGES
    assert call.idempotency_key == "turn-9/toolu_c"


# ---- what a result may be, and how large ---------------------------------------------------


class Opaque:
    def __str__(self) -> str:
        return "an opaque thing"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Opaque(), "an opaque thing"),
        ({"thing": Opaque(), "n": 1}, '{"thing":"an opaque thing","n":1}'),
        (Window(start=1, end=2), '{"start":1,"end":2}'),
    ],
)
async def test_a_result_that_is_not_json_becomes_text(value: object, text: str) -> None:
    tool = worker_tool(name="opaque")(lambda: value)
    assert await run_tool(tool, {}) == text


@pytest.mark.parametrize("value", [b"\x89PNG\r\n", bytearray(b"\x89PNG\r\n"), memoryview(b"12345")])
async def test_binary_results_are_refused_in_words(
    tmp_path: Path, value: bytes | bytearray | memoryview
) -> None:
    tool = worker_tool(name="screenshot")(lambda: value)
    activities = ToolActivities(ToolRegistry([tool]), LocalFolderStore(tmp_path / "store"))
    result = await run_call(activities, "screenshot")
    assert result.is_error
    size = len(bytes(value))
    assert result.content == (
        f"tool screenshot returned {size} bytes of binary data, which cannot be shown to the model"
    )


@pytest.mark.parametrize(
    ("tool", "is_error", "total"), [("huge", False, 100_000), ("huge_refusal", True, 100_004)]
)
async def test_no_result_exceeds_the_cap(
    tmp_path: Path, tool: str, is_error: bool, total: int
) -> None:
    @worker_tool(name="huge")
    def huge() -> str:
        return "x" * 100_000

    @worker_tool(name="huge_refusal")
    def huge_refusal() -> str:
        raise ToolError("no: " + "y" * 100_000)

    store = LocalFolderStore(tmp_path / "store")
    registry = ToolRegistry([huge, huge_refusal])
    result = await run_call(ToolActivities(registry, store, max_result_bytes=4096), tool)
    assert result.is_error is is_error
    assert len(result.content.encode()) <= 4096
    shown, marker = result.content.split("\n")
    assert marker == f"[… truncated: showing the first {len(shown)} of {total} bytes]"
    assert (await stored_block(store, result)).content == result.content
    default = await run_call(ToolActivities(registry, store), tool)
    assert 60_000 < len(default.content.encode()) <= 64 * 1024


@pytest.mark.parametrize("cap", [100, 10 * 1024 * 1024])
def test_a_cap_that_cannot_work_is_refused(tmp_path: Path, cap: int) -> None:
    with pytest.raises(ValueError, match="max_result_bytes must be between 1024 and 262144"):
        ToolActivities(ToolRegistry(), LocalFolderStore(tmp_path / "store"), max_result_bytes=cap)


def test_a_worker_tool_may_not_take_the_mcp_prefix() -> None:
    from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool

    @worker_tool(name="mcp__files__read")
    def impostor() -> str:
        """Pretends to be an MCP tool."""
        return ""

    with pytest.raises(ValueError, match="mcp__ prefix"):
        ToolRegistry([impostor])
