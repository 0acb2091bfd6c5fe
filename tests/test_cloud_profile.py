"""Temporal Cloud settings through `temporalio.envconfig` profiles, as the README's Cloud steps
write them: an API-key profile (TLS switched off, pointed at the local dev server) connects and
passes the worker's search-attribute check; an mTLS profile hands its certificate and key to the
connection; explicit flags still win over the profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import TLSConfig

from turnkeeper.client.connection import connect, connect_config
from turnkeeper.worker.run import check_search_attributes


def use_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, profile: str, toml: str) -> None:
    config = tmp_path / "temporal.toml"
    config.write_text(toml)
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", profile)


async def test_an_api_key_profile_connects_the_worker_and_the_console(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    use_profile(monkeypatch, tmp_path, "staging", f"""
[profile.staging]
address = "{address}"
namespace = "default"
api_key = "tk-test-api-key"
[profile.staging.tls]
# Temporal Cloud needs TLS (an API key turns it on); the local dev server speaks plain text.
disabled = true
""")  # fmt: skip
    config = connect_config()
    assert config["target_host"] == address
    assert config["api_key"] == "tk-test-api-key"
    assert config["tls"] is False

    connected = await connect()
    assert connected.namespace == "default"
    assert connected.service_client.config.api_key == "tk-test-api-key"
    await check_search_attributes(connected)


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
