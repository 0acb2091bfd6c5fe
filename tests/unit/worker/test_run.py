"""`run_worker`'s refusals before it starts anything: the dev-server ports it was given, named as
its own arguments, and ports without `dev=True`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import turnkeeper
from tests.support.ports import free_ports, silent_listener
from turnkeeper.devtools.devserver import DevServerError


@pytest.mark.parametrize(
    ("taken", "named"), [("grpc", "run_worker(dev_port=…)"), ("ui", "run_worker(ui_port=…)")]
)
async def test_run_worker_names_its_own_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: str, named: str
) -> None:
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    (free,) = free_ports(1)
    with silent_listener() as busy:
        port, ui_port = (busy, free) if taken == "grpc" else (free, busy)
        with pytest.raises(DevServerError, match=rf"choose another port with {re.escape(named)}"):
            await turnkeeper.run_worker(dev=True, dev_port=port, ui_port=ui_port)


async def test_run_worker_refuses_ports_without_dev() -> None:
    with pytest.raises(ValueError, match="need dev=True"):
        await turnkeeper.run_worker(dev_port=7999)
