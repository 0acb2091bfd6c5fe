"""The sandbox tools' contract: `agent.sandbox` and the report's `sandbox` (the activity's input
and result are in contracts/sandbox_io.py).

`run_python {"code"}` and `run_shell {"command"}` run in a bubblewrap sandbox on the worker
(activities/sandbox/). The folder lives in no worker: after each call its files go into the
content store as one tar archive, and the turn keeps the archive's reference in history and
hands it to the next call, so a call on another worker, or after continue-as-new, starts from
the same files.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field
from turnkeeper.contracts.contract_model import ContractModel

RUN_PYTHON: Final = "run_python"
RUN_SHELL: Final = "run_shell"
SANDBOX_TOOLS: Final = (RUN_PYTHON, RUN_SHELL)

DEFAULT_TIMEOUT_S: Final = 30.0
DEFAULT_MEMORY_MB: Final = 256
# The bounds a request may ask for at all; each worker's own maxima (activities/sandbox/
# limits.py) are at most these.
MAX_TIMEOUT_S: Final = 3600.0
MAX_MEMORY_MB: Final = 65_536


class SandboxSpec(ContractModel):
    """`agent.sandbox`: the limits and the seed of the turn's sandbox folder. Every field has a
    safe default; a value above the worker's maximum makes each call an error that says so."""

    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    """Wall time of one call; CPU time is capped at the same number of seconds."""
    memory_mb: int = Field(default=DEFAULT_MEMORY_MB, ge=16, le=MAX_MEMORY_MB)
    """Address space of each process of a call, in MiB."""
    network: bool = False
    """True: the call shares the worker's network (only where the worker allows it,
    `TURNKEEPER_SANDBOX_ALLOW_NETWORK`); False: no network at all, not even loopback."""
    files: list[str] = Field(default_factory=list)
    """Workspace paths (files or folders, relative to `AGENT_WORKSPACE`) copied into the sandbox
    folder before the turn's first call, at the same relative paths."""


class SandboxReport(ContractModel):
    """`AgentReport.sandbox`: the turn's sandbox folder as its last call left it."""

    ref: str
    """The folder's tar archive in the content store (`turnkeeper sandbox get` reads it)."""
    files: list[str] = Field(default_factory=list)
    """Every file in the folder, by path: seeded, or produced by the turn's calls."""
