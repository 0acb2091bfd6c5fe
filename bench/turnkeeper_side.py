"""Our side: the real `AgentTurnWorkflow` and activities, with an in-process model and tool.

Only the provider and the tool are stand-ins: `BenchProvider` plays the scripted turn through the
provider seam (no HTTP), and `fetch_blob` is an ordinary worker tool returning the 2 KiB blob.
Everything else (the activities, the content store, the workflow, the data converter, the way
our client starts a turn) is what a deployed worker runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.worker import Worker
from turnkeeper.activities.providers.provider import ModelRequest, ModelResponse, TextSink
from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool
from turnkeeper.contracts.messages import TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.names import ACTIVITY_MODEL_CALL, ACTIVITY_TOOL_CALL
from turnkeeper.contracts.turn import AgentReport, TurnRequest, Usage
from turnkeeper.contracts.waits import WAIT_TOOL

from bench.scenario import (
    BLOB,
    BLOB_BYTES,
    MODEL,
    PARK_TOOL_NAME,
    TOOL_NAME,
    make_blob,
    parse_task_text,
    task_text,
)
from turnkeeper.payloads.content_store import ContentStore, LocalFolderStore
from turnkeeper.payloads.encrypted_store import encrypting
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

MODEL_ACTIVITY: Final = ACTIVITY_MODEL_CALL
TOOL_ACTIVITY: Final = ACTIVITY_TOOL_CALL
# Rough token counts, so the turn has a cost (and a CostUsd that changes) like a real one.
_PROMPT_TOKENS = 300
_TOKENS_PER_RESULT = 700
_OUTPUT_TOKENS = 40


class BenchProvider:
    """A model that sleeps L, then asks for `fetch_blob` until it has seen K tool results (and
    then, in a parking turn, for `go_ahead`). It bills `tokens_per_result` input tokens for
    each tool result it has seen, so a turn's conversation grows as a real one would."""

    name = "anthropic"

    def __init__(self, tokens_per_result: int = _TOKENS_PER_RESULT) -> None:
        self.tokens_per_result = tokens_per_result

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        k, latency_s, park = parse_task_text(_first_user_text(request))
        seen = sum(
            isinstance(block, ToolResultBlock)
            for message in request.messages
            if message.role == "user"
            for block in message.content
        )
        if latency_s > 0:
            await asyncio.sleep(latency_s)
        usage = Usage(
            input_tokens=_PROMPT_TOKENS + self.tokens_per_result * seen,
            output_tokens=_OUTPUT_TOKENS,
        )
        if seen < k:
            call = ToolUseBlock(id=f"toolu_bench_{seen:05d}", name=TOOL_NAME, input={"i": seen})
            return ModelResponse(
                content=[call], stop_reason="tool_use", usage=usage, model=request.model
            )
        if park and seen == k and any(tool.name == WAIT_TOOL for tool in request.tools):
            # An agent with the built-in `wait` tool parks on a week's timer (bench/waiting.py).
            week = {"seconds": 7 * 86400, "reason": "bench"}
            call = ToolUseBlock(id="toolu_bench_wait", name=WAIT_TOOL, input=week)
            return ModelResponse(
                content=[call], stop_reason="tool_use", usage=usage, model=request.model
            )
        if park and seen == k:
            call = ToolUseBlock(id="toolu_bench_park", name=PARK_TOOL_NAME, input={})
            return ModelResponse(
                content=[call], stop_reason="tool_use", usage=usage, model=request.model
            )
        return ModelResponse(
            content=[TextBlock(text="done")],
            stop_reason="end_turn",
            usage=usage,
            model=request.model,
        )

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return _PROMPT_TOKENS + self.tokens_per_result * len(request.messages) // 2


def _first_user_text(request: ModelRequest) -> str:
    for message in request.messages:
        if message.role == "user":
            return message.text()
    raise ValueError("the request has no user message")


async def fetch_blob(i: int) -> str:
    return BLOB


def _sized_fetch_blob(size: int) -> Callable[[int], Awaitable[str]]:
    blob = make_blob(size)

    # Named as the tool is: the registry derives the input schema's name from the function's.
    async def fetch_blob(i: int) -> str:
        return blob

    return fetch_blob


async def go_ahead() -> str:
    return "going ahead"


def bench_tools(*, local: bool = False, result_bytes: int | None = None) -> ToolRegistry:
    """`fetch_blob`, as an ordinary worker tool or (`local`) on the fast path for cheap tools;
    its result is the 2 KiB blob unless `result_bytes` asks for another size."""
    options: dict[str, Any] = {"local": True, "timeout_s": 10.0} if local else {}
    tool = fetch_blob if result_bytes is None else _sized_fetch_blob(result_bytes)
    kib = (result_bytes or BLOB_BYTES) / 1024
    description = f"Return a fixed {kib:g} KiB blob (a benchmark stand-in)."
    return ToolRegistry(
        [
            worker_tool(name=TOOL_NAME, description=description, **options)(tool),
            worker_tool(name=PARK_TOOL_NAME, description="Carry on (needs approval).")(go_ahead),
        ]
    )


def turnkeeper_worker(
    client: Client,
    task_queue: str,
    data_dir: Path,
    *,
    local_tool: bool = False,
    encrypt: bool = False,
    provider: Any = None,
    result_bytes: int | None = None,
    policy_files: tuple[Path, ...] = (),
    **options: Any,
) -> Worker:
    """Our worker as `worker.build_worker` wires it, with the bench provider and tool.

    Args:
        client: A client with the pydantic data converter.
        task_queue: The queue to poll.
        data_dir: Where the content store (and an empty workspace) live.
        local_tool: Run `fetch_blob` on the fast path (a local activity).
        encrypt: Encrypt the content store (the client's converter must encrypt too).
        provider: The scripted model, `BenchProvider` unless given (`bench.subagents` plays
            a lead agent with its own).
        result_bytes: The size of `fetch_blob`'s result, 2 KiB unless given (`bench.long_history`
            plays a turn of 8 KiB results).
        policy_files: The worker's Cedar policy files (`bench.policies`); none unless given.
        options: Extra `Worker` keyword arguments (the knobs `bench.run` exposes).
    """
    settings = Settings(
        task_queue=task_queue,
        workspace=data_dir / "workspace",
        data_dir=data_dir,
        store_dir=data_dir / "store",
        policy_files=policy_files,
    )
    settings.workspace.mkdir(parents=True, exist_ok=True)
    activities = build_activities(
        settings,
        client=client,
        providers={"anthropic": provider or BenchProvider()},
        tools=bench_tools(local=local_tool, result_bytes=result_bytes),
        store=bench_store(data_dir, encrypt=encrypt),
    )
    return Worker(
        client,
        task_queue=task_queue,
        workflows=worker_workflows(),
        activities=activities,
        # The production settings (sandbox, pollers, cache) unless the bench's flags ask for others.
        **{"workflow_runner": workflow_runner(), **settings.tuning.worker_options(), **options},
    )


def bench_keyring(*, encrypt: bool) -> Keyring:
    """A fixed key, so that the parked section's worker subprocess decrypts what the client
    encrypted; it protects nothing but the bench's own scripted content. Made on demand: a key
    loads `cryptography`, which an unencrypted worker does not hold."""
    if not encrypt:
        return Keyring()
    return Keyring({"bench": hashlib.sha256(b"turnkeeper bench key").digest()})


def bench_store(data_dir: Path, *, encrypt: bool = False) -> ContentStore:
    return encrypting(LocalFolderStore(data_dir / "store"), bench_keyring(encrypt=encrypt))


def bench_data_converter(data_dir: Path, *, encrypt: bool = False) -> DataConverter:
    """The converter of every client of our side: large activity payloads go to the store, and
    with `encrypt` every payload and stored object is encrypted (TURNKEEPER_ENCRYPTION_KEYS)."""
    keyring = bench_keyring(encrypt=encrypt)
    return turn_data_converter(bench_store(data_dir, encrypt=encrypt), keyring)


def turn_request(
    k: int, latency_ms: float, *, needs_approval: bool = False, park_after: bool = False
) -> TurnRequest:
    """The scripted turn; `needs_approval` parks it on its first `fetch_blob`, `park_after` on
    the `go_ahead` call after its K `fetch_blob` calls (a transcript of K iterations)."""
    task: dict[str, Any] = {"id": f"bench-k{k}", "input": task_text(k, latency_ms, park=park_after)}
    tools = [TOOL_NAME]
    if needs_approval:
        task["constraints"] = {"require_approval": [TOOL_NAME]}
    if park_after:
        tools.append(PARK_TOOL_NAME)
        task["constraints"] = {"require_approval": [PARK_TOOL_NAME]}
    return TurnRequest.model_validate(
        {
            "agent": {
                "id": "bench",
                "model": MODEL,
                "tools": tools,
                "max_iterations": k + 2 if park_after else k + 1,
            },
            "task": task,
        }
    )


async def start_turnkeeper_turn(
    client: Client,
    task_queue: str,
    k: int,
    latency_ms: float,
    *,
    needs_approval: bool = False,
    park_after: bool = False,
) -> WorkflowHandle[Any, AgentReport]:
    """Starts a turn the way `turnkeeper run` does."""
    # The client's modules (typer, rich) are imported here, not at the top: a parked worker's
    # process imports this module and should hold only what a deployed worker holds.
    from turnkeeper.client.turns import start_turn_workflow

    return await start_turn_workflow(
        client,
        turn_request(k, latency_ms, needs_approval=needs_approval, park_after=park_after),
        workflow_id=f"turn-bench-k{k}-{uuid.uuid4().hex[:10]}",
        task_queue=task_queue,
    )


async def start_parked_session_turn(client: Client, task_queue: str) -> WorkflowHandle[Any, Any]:
    """Starts a session whose first turn parks on the approval of its `fetch_blob` call; the
    session's handle (terminating it terminates the turn, its child)."""
    from turnkeeper.client.sessions import start_session

    handle = await start_session(
        client,
        session_id=f"session-bench-{uuid.uuid4().hex[:10]}",
        agent={"id": "bench", "model": MODEL, "tools": [TOOL_NAME], "max_iterations": 2},
        constraints={"require_approval": [TOOL_NAME]},
        task_queue=task_queue,
    )
    await handle.send(task_text(1, 0))
    return handle.workflow


def check_report(report: AgentReport, k: int) -> None:
    """Raises if the turn did not play the script (a broken bench must not produce numbers)."""
    if report.outcome != "completed" or report.tool_calls != k or report.output != "done":
        raise RuntimeError(
            f"turnkeeper turn k={k} ended {report.outcome!r} with {report.tool_calls} tool calls "
            f"and output {report.output[:80]!r}"
        )
