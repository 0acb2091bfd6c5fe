"""The `sandbox_call` activity's input and result, and what a turn keeps of its sandbox folder
(a content-store reference and the files in it): contracts/sandbox.py says how they fit."""

from __future__ import annotations

from pydantic import Field, JsonValue
from turnkeeper.contracts.activity_io import CompactModel, ToolCallResult
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.sandbox import SandboxReport, SandboxSpec


class SandboxState(CompactModel):
    """The turn's sandbox folder after its last call."""

    ref: str
    """The content-store reference of the folder as a tar archive."""
    files: list[str] = Field(default_factory=list)
    """The folder's files (regular files, by path), sorted."""


class SandboxCallInput(CompactModel, ClaimChecked):
    """The `sandbox_call` activity's input: one `run_python` or `run_shell` call."""

    turn_id: str = ""
    """Empty: the activity reads the turn's id from its own info."""
    call_id: str
    """The call's id."""
    tool: str
    """`run_python` or `run_shell`."""
    input: dict[str, JsonValue]
    """The model's arguments."""
    spec: SandboxSpec | None = None
    """`agent.sandbox`; None: the defaults."""
    state_ref: str | None = None
    """The folder after the turn's previous call; None: the turn's first call (then
    `spec.files` seeds it)."""
    stream_output: bool = False
    """Publish the output as `tool_output` events while the call runs (`agent.stream`)."""


class SandboxCallResult(ToolCallResult):
    """The call's `tool_result` (already stored, as for any worker tool) and the folder after it."""

    state: SandboxState | None = None
    """The folder after the call; None: unchanged (the call was refused before it ran)."""


def sandbox_report(state: SandboxState | None) -> SandboxReport | None:
    """The report's `sandbox`: the folder after the turn's last call, if it made one."""
    if state is None:
        return None
    return SandboxReport(ref=state.ref, files=list(state.files))
