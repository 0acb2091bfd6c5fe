"""The telemetry that every `connect` of this process passes to `Client.connect`: the tracing
plugin (workers built on the client inherit it) and the runtime that exports Temporal's metrics.

The worker's `configure_telemetry` sets them once, when it installs OpenTelemetry; the client only
holds them, so that connecting loads neither the worker nor OpenTelemetry's SDK. Until then
`connect` adds nothing, and telemetry that is off costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_options: dict[str, Any] = {}


def use_telemetry(options: Mapping[str, Any]) -> None:
    """Pass `options` (`plugins`, `runtime`) to every later `connect` of this process."""
    _options.clear()
    _options.update(options)


def telemetry_options() -> dict[str, Any]:
    """The keyword arguments `use_telemetry` set for `Client.connect`; empty when none are."""
    return dict(_options)
