"""Where `connect` dials and what it says when nothing answers: the connection settings from the
environment, the arguments and a Temporal Cloud mTLS profile, and a closed port (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from tests.support.cloud_profiles import use_profile
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


def test_an_mtls_profile_gives_the_connection_its_certificate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "client.pem").write_text("CERTIFICATE")
    (tmp_path / "client.key").write_text("KEY")
    use_profile(monkeypatch, tmp_path, "prod", f"""
[profile.prod]
address = "turnkeeper.a1b2c.tmprl.cloud:7233"
namespace = "turnkeeper.a1b2c"
[profile.prod.tls]
client_cert_path = "{tmp_path / "client.pem"}"
client_key_path = "{tmp_path / "client.key"}"
""")  # fmt: skip
    config = connect_config()
    assert config["target_host"] == "turnkeeper.a1b2c.tmprl.cloud:7233"
    assert config["namespace"] == "turnkeeper.a1b2c"
    tls = config["tls"]
    assert isinstance(tls, TLSConfig)
    assert (tls.client_cert, tls.client_private_key) == (b"CERTIFICATE", b"KEY")

    overridden = connect_config(address="localhost:7233", namespace="other")
    assert (overridden["target_host"], overridden["namespace"]) == ("localhost:7233", "other")
    assert overridden["tls"] == tls
