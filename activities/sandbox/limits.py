"""What a worker allows its sandboxes (`TURNKEEPER_SANDBOX_*`, read by
turnkeeper/worker/sandbox_settings.py), and the check of a turn's `agent.sandbox` against it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Final

from turnkeeper.contracts.sandbox import DEFAULT_TIMEOUT_S, SandboxSpec

# The host paths a sandbox sees read-only when the operator names none: enough of the system for
# /bin/sh, tar, coreutils and python3, and nothing of the host's users, keys or services. A path
# that is a symbolic link on the host (/bin -> usr/bin on merged-/usr systems) becomes the same
# link in the sandbox.
DEFAULT_IMAGE: Final = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc/alternatives",
    "/etc/ld.so.cache",
)
BWRAP_ENV: Final = "TURNKEEPER_SANDBOX_BWRAP"
INSTALL_HINT: Final = (
    "install bubblewrap on the worker's host (Debian and Ubuntu: `apt-get install bubblewrap`; "
    "Fedora: `dnf install bubblewrap`) and restart the worker, or point "
    "TURNKEEPER_SANDBOX_BWRAP at its bwrap"
)


@dataclass(frozen=True)
class SandboxLimits:
    """The operator's maxima and the fixed limits of every sandbox call.

    Attributes:
        bwrap: bubblewrap's executable (`TURNKEEPER_SANDBOX_BWRAP`, default `bwrap` on PATH).
        image: host paths mounted read-only at the same place (`TURNKEEPER_SANDBOX_IMAGE`).
        max_timeout_s: the largest `agent.sandbox.timeout_s` a call may ask for.
        max_memory_mb: the largest `agent.sandbox.memory_mb`.
        allow_network: whether `agent.sandbox.network: true` is allowed at all.
        disk_mb: the size of the sandbox folder (a tmpfs): a call that fills it gets ENOSPC.
        max_processes: processes and threads one call may run at once.
        max_output_bytes: stdout and stderr are each cut past this, saying how much was left out.
        first_uid: as root, each call runs under a user id of its own from
            [first_uid, first_uid + uid_count), so the processes limit counts that call alone.
    """

    bwrap: str = "bwrap"
    image: tuple[str, ...] = DEFAULT_IMAGE
    max_timeout_s: float = 300.0
    max_memory_mb: int = 2048
    allow_network: bool = False
    disk_mb: int = 64
    max_processes: int = 64
    max_output_bytes: int = 64 * 1024
    first_uid: int = 200_000
    uid_count: int = 60_000

    def bwrap_path(self) -> str | None:
        """bubblewrap's full path, or None when the host has none."""
        return shutil.which(self.bwrap)

    def problem(self, spec: SandboxSpec) -> str | None:
        """Why this worker refuses `spec`, in words for the model and the operator; None: fine."""
        if spec.timeout_s > self.max_timeout_s:
            return (
                f"agent.sandbox.timeout_s={spec.timeout_s:g} is above this worker's maximum of "
                f"{self.max_timeout_s:g} s (TURNKEEPER_SANDBOX_MAX_TIMEOUT_S)"
            )
        if spec.memory_mb > self.max_memory_mb:
            return (
                f"agent.sandbox.memory_mb={spec.memory_mb} is above this worker's maximum of "
                f"{self.max_memory_mb} MiB (TURNKEEPER_SANDBOX_MAX_MEMORY_MB)"
            )
        if spec.network and not self.allow_network:
            return (
                "agent.sandbox.network is true, but this worker gives its sandboxes no network "
                "(TURNKEEPER_SANDBOX_ALLOW_NETWORK is off)"
            )
        return None


def tool_timeout_s(limits: SandboxLimits) -> float:
    """The tools' declared timeout (the activity's start-to-close, in the turn): the longest call
    this worker allows, plus time to restore and save the folder."""
    return max(limits.max_timeout_s, DEFAULT_TIMEOUT_S) + 30.0
