"""Temporal Cloud settings through `temporalio.envconfig` profiles, as the README's Cloud steps
write them: an API-key profile (TLS switched off, pointed at the local dev server) connects and
passes the worker's search-attribute check. (An mTLS profile handing its certificate and key to
the connection: tests/unit/client/test_connection.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from tests.support.cloud_profiles import use_profile
from turnkeeper.client.connection import connect, connect_config
from turnkeeper.worker.run import check_search_attributes


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
