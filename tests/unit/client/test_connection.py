"""Where `connect` dials and what it says when nothing answers: the connection settings from the
environment and the arguments, and a closed port (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ports import free_ports
from turnkeeper.client.connection import TemporalUnreachableError, connect, connect_config


async def test_connect_to_a_closed_port_names_the_address_and_the_dev_flag() -> None:
    (port,) = free_ports(1)
    address = f"127.0.0.1:{port}"
    with pytest.raises(TemporalUnreachableError) as failure:
        await connect(address=address)
    message = str(failure.value)
    assert address in message
    assert "python worker.py --dev" in message


def test_connect_config_defaults_env_and_explicit_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    assert connect_config() == {"target_host": "localhost:7233", "namespace": "default"}

    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal.example:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "agents")
    assert connect_config() == {"target_host": "temporal.example:7233", "namespace": "agents"}
    assert connect_config(address="other:1", namespace="ns") == {
        "target_host": "other:1",
        "namespace": "ns",
    }

    monkeypatch.setenv("TEMPORAL_API_KEY", "not-for-localhost")
    assert connect_config()["tls"] is True
    assert "tls" not in connect_config(from_env=False)
