"""The `sandbox_call` activity, which runs every `run_python` and `run_shell` call, and the two
tools as the model sees them.

A call starts from the turn's folder as its previous call left it (the content-store reference
the workflow passes in; the workspace files of `agent.sandbox.files` for the first call), runs
in a fresh bubblewrap sandbox (bubblewrap.py), and stores the folder afterwards, so the next
call can run on any worker. Like `tool_call`, every refusal is an `is_error` result for the
model, never a failure Temporal would retry; the tools are not idempotent, so a call a crash
interrupted is reported to the model as one that may or may not have run.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Annotated

from pydantic import Field
from temporalio import activity
from turnkeeper.activities.heartbeating import heartbeating
from turnkeeper.activities.sandbox import bubblewrap, folder
from turnkeeper.activities.sandbox.limits import INSTALL_HINT, SandboxLimits, tool_timeout_s
from turnkeeper.activities.sandbox.live_output import live_output
from turnkeeper.activities.tools.registry import ToolError, WorkerTool, worker_tool
from turnkeeper.activities.tools.results import stored_result
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.activities.turn_identity import bound_to_turn
from turnkeeper.contracts.names import ACTIVITY_SANDBOX_CALL
from turnkeeper.contracts.result_limits import DEFAULT_MAX_RESULT_BYTES, capped
from turnkeeper.contracts.sandbox import RUN_PYTHON, RUN_SHELL, SandboxSpec
from turnkeeper.contracts.sandbox_io import SandboxCallInput, SandboxCallResult, SandboxState

from turnkeeper.payloads.content_store import ContentStore

# Code travels to the sandbox as one argument, which Linux caps at 128 KiB.
MAX_CODE_CHARS = 100_000


class SandboxActivities:
    """`sandbox_call` over one worker's limits, content store and workspace (for the seeds)."""

    def __init__(
        self,
        limits: SandboxLimits,
        store: ContentStore,
        workspace: Workspace,
        *,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        self._limits = limits
        self._store = store
        self._workspace = workspace
        self._max_result_bytes = max_result_bytes

    @activity.defn(name=ACTIVITY_SANDBOX_CALL)
    async def sandbox_call(self, call: SandboxCallInput) -> SandboxCallResult:
        """Run one sandboxed call and store its `tool_result` and the folder after it."""
        call = bound_to_turn(call)
        started = time.monotonic()
        try:
            text, state = await heartbeating(self._run(call))
            is_error = False
        except ToolError as refusal:
            text, state, is_error = str(refusal), None, True
        result = await stored_result(
            self._store,
            turn_id=call.turn_id,
            call_id=call.call_id,
            tool=call.tool,
            text=capped(text, self._max_result_bytes),
            is_error=is_error,
            started=started,
        )
        return SandboxCallResult(**dict(result), state=state)

    async def _run(self, call: SandboxCallInput) -> tuple[str, SandboxState]:
        spec = call.spec or SandboxSpec()
        bwrap = self._limits.bwrap_path()
        if bwrap is None:
            raise ToolError(f"this worker cannot run {call.tool}: no bubblewrap; {INSTALL_HINT}")
        if (problem := self._limits.problem(spec)) is not None:
            raise ToolError(f"{call.tool} not run: {problem}")
        seed = await self._seed(call, spec)
        async with live_output(call, self._limits.max_output_bytes) as on_output:
            outcome = await bubblewrap.run(
                self._limits, spec, bwrap, _command(call), seed, on_output
            )
        saved = outcome.archive if outcome.archive is not None else seed
        before, after = folder.files(seed), folder.files(saved)
        ref = await self._store.put(saved)
        report = {
            "exit_code": outcome.exit_code,
            "stdout": _shown(outcome.stdout, outcome.stdout_total, "stdout"),
            "stderr": _shown(outcome.stderr, outcome.stderr_total, "stderr")
            + _not_saved_note(outcome),
            "timed_out": outcome.timed_out,
            "files_changed": folder.changed(before, after),
        }
        return json.dumps(report, ensure_ascii=False), SandboxState(ref=ref, files=sorted(after))

    async def _seed(self, call: SandboxCallInput, spec: SandboxSpec) -> bytes:
        if call.state_ref is not None:
            return await self._store.get(call.state_ref)
        if spec.files:
            return folder.seed_archive(
                self._workspace, spec.files, self._limits.disk_mb * 1024 * 1024
            )
        return folder.empty_archive()


def _command(call: SandboxCallInput) -> list[str]:
    if call.tool == RUN_PYTHON and isinstance(code := call.input.get("code"), str):
        return ["python3", "-c", code]
    if call.tool == RUN_SHELL and isinstance(command := call.input.get("command"), str):
        return ["sh", "-c", command]
    raise ToolError(f"invalid arguments for {call.tool}: expected a string 'code' or 'command'")


def _shown(data: bytes, total: int, name: str) -> str:
    text = data.decode("utf-8", errors="replace")
    if total > len(data):
        text += f"\n[{name} cut: showing the first {len(data)} of {total} bytes]"
    return text


def _not_saved_note(outcome: bubblewrap.RunOutcome) -> str:
    if outcome.archive is not None:
        return ""
    return "\n[the sandbox folder was not saved: the call was stopped; it keeps its earlier files]"


def sandbox_tools(limits: SandboxLimits) -> list[WorkerTool]:
    """`run_python` and `run_shell`, as the model is offered them. Their calls run as
    `sandbox_call` (the turn routes them by their `sandboxed` trait), never through these
    functions."""
    timeout_s = tool_timeout_s(limits)

    @worker_tool(name=RUN_PYTHON, idempotent=False, timeout_s=timeout_s)
    def run_python(
        code: Annotated[str, Field(max_length=MAX_CODE_CHARS, description="Python 3 source.")],
    ) -> str:
        """Run Python 3 code in the turn's sandbox: an isolated folder (the current directory)
        whose files persist between calls, with no network and time and memory limits. Returns
        exit_code, stdout, stderr, timed_out and files_changed."""
        raise ToolError(_ROUTED)

    @worker_tool(name=RUN_SHELL, idempotent=False, timeout_s=timeout_s)
    def run_shell(
        command: Annotated[
            str, Field(max_length=MAX_CODE_CHARS, description="A POSIX sh command line.")
        ],
    ) -> str:
        """Run a shell command in the turn's sandbox: an isolated folder (the current directory)
        whose files persist between calls, with no network and time and memory limits. Returns
        exit_code, stdout, stderr, timed_out and files_changed."""
        raise ToolError(_ROUTED)

    return [_sandboxed(run_python), _sandboxed(run_shell)]


_ROUTED = (
    "this call reached tool_call; sandbox tools run as sandbox_call (a turn from an older build?)"
)


def _sandboxed(tool: WorkerTool) -> WorkerTool:
    return dataclasses.replace(tool, sandboxed=True)
