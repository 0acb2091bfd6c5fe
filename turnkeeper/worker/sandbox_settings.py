"""`TURNKEEPER_SANDBOX_*`: what the worker allows the sandboxes of `run_python` and `run_shell`
(activities/sandbox/limits.py; docs/sandbox.md lists them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from turnkeeper.activities.sandbox.limits import BWRAP_ENV, DEFAULT_IMAGE, SandboxLimits
from turnkeeper.client.env_numbers import whole_number
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.contracts.sandbox import MAX_MEMORY_MB, MAX_TIMEOUT_S

IMAGE_ENV: Final = "TURNKEEPER_SANDBOX_IMAGE"
MAX_TIMEOUT_ENV: Final = "TURNKEEPER_SANDBOX_MAX_TIMEOUT_S"
MAX_MEMORY_ENV: Final = "TURNKEEPER_SANDBOX_MAX_MEMORY_MB"
ALLOW_NETWORK_ENV: Final = "TURNKEEPER_SANDBOX_ALLOW_NETWORK"
DISK_ENV: Final = "TURNKEEPER_SANDBOX_DISK_MB"
MAX_PROCESSES_ENV: Final = "TURNKEEPER_SANDBOX_MAX_PROCESSES"
MAX_OUTPUT_ENV: Final = "TURNKEEPER_SANDBOX_MAX_OUTPUT_BYTES"

_YES: Final = frozenset({"1", "true", "yes", "on"})
_NO: Final = frozenset({"", "0", "false", "no", "off"})


def sandbox_limits(env: Mapping[str, str]) -> SandboxLimits:
    """The worker's sandbox limits from `env`; unset or empty variables keep the defaults.

    Raises:
        SettingsError: A value out of range, or an image path that is not absolute.
    """
    default = SandboxLimits()
    return SandboxLimits(
        bwrap=env.get(BWRAP_ENV) or default.bwrap,
        image=_image(env.get(IMAGE_ENV)),
        max_timeout_s=float(
            whole_number(
                env,
                MAX_TIMEOUT_ENV,
                int(default.max_timeout_s),
                minimum=1,
                maximum=int(MAX_TIMEOUT_S),
            )
        ),
        max_memory_mb=whole_number(
            env, MAX_MEMORY_ENV, default.max_memory_mb, minimum=16, maximum=MAX_MEMORY_MB
        ),
        allow_network=_switch(env, ALLOW_NETWORK_ENV),
        disk_mb=whole_number(env, DISK_ENV, default.disk_mb, minimum=1, maximum=65_536),
        max_processes=whole_number(
            env, MAX_PROCESSES_ENV, default.max_processes, minimum=1, maximum=4096
        ),
        max_output_bytes=whole_number(
            env, MAX_OUTPUT_ENV, default.max_output_bytes, minimum=1024, maximum=16 * 1024 * 1024
        ),
    )


def _image(raw: str | None) -> tuple[str, ...]:
    if not raw:
        return DEFAULT_IMAGE
    paths = tuple(path for path in raw.split(":") if path)
    relative = [path for path in paths if not path.startswith("/")]
    if relative:
        raise SettingsError(
            f"{IMAGE_ENV} takes absolute paths separated by ':', got {relative[0]!r}"
        )
    return paths


def _switch(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in _YES or value in _NO:
        return value in _YES
    raise SettingsError(f"{name} must be on or off (1/0, true/false, yes/no), got {env[name]!r}")
