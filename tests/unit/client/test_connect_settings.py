"""What `connect` reads from the environment before it dials Temporal: the store's variables and
the keys, each failing with its own clear error, and none of the worker's settings, so that a
variable only a worker uses cannot stop a client. `Client.connect` is replaced: no server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from turnkeeper.client import connection
from turnkeeper.client import telemetry_options as connect_telemetry
from turnkeeper.client.connection import connect
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.payloads.keyring import EncryptionKeyError
from turnkeeper.payloads.stores import StoreLocation, StoreLocationError
from turnkeeper.worker.settings import Settings

STORE_VARIABLES = ("TURNKEEPER_STORE_URL", "TURNKEEPER_STORE_DIR", "TURNKEEPER_ENCRYPTION_KEYS")
WORKER_ONLY_MISTAKES = {
    "TURNKEEPER_MAX_WRITE_BYTES": "abc",
    "TURNKEEPER_MAX_TOOL_RESULT_BYTES": "-1",
    "TURNKEEPER_REQUIRE_ENCRYPTION": "maybe",
}


@pytest.fixture
def dialled(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """The keyword arguments of each `Client.connect`, in an environment of the test's own."""
    for name in STORE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path))
    calls: list[dict[str, Any]] = []

    async def recorded_connect(*args: Any, **kwargs: Any) -> str:
        calls.append(kwargs)
        return "client"

    monkeypatch.setattr(Client, "connect", recorded_connect)
    return calls


def opened_stores(monkeypatch: pytest.MonkeyPatch) -> list[StoreLocation]:
    opened: list[StoreLocation] = []
    real_open_store = connection.open_store

    def recording_open_store(location: StoreLocation, *args: Any) -> Any:
        opened.append(location)
        return real_open_store(location, *args)

    monkeypatch.setattr(connection, "open_store", recording_open_store)
    return opened


@pytest.mark.parametrize(("name", "value"), WORKER_ONLY_MISTAKES.items())
async def test_a_worker_only_mistake_does_not_stop_a_client(
    dialled: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: str,
    value: str,
) -> None:
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("TURNKEEPER_STORE_DIR", str(tmp_path / "shared"))
    opened = opened_stores(monkeypatch)

    await connect(address="localhost:1", from_env=False)

    assert len(dialled) == 1
    [location] = opened
    assert (location.store_url, location.store_dir) == (None, tmp_path / "shared")
    # The worker, which uses the variable, still refuses it.
    with pytest.raises(SettingsError, match=f"^{name} must be"):
        Settings.from_env()


async def test_the_store_defaults_to_the_data_folder_as_the_workers_does(
    dialled: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    opened = opened_stores(monkeypatch)

    await connect(address="localhost:1", from_env=False)

    [location] = opened
    worker = Settings.from_env()
    assert (location.store_url, location.store_dir) == (worker.store_url, worker.store_dir)
    assert location.store_dir == tmp_path / "store"


async def test_a_bad_store_url_fails_before_dialling(
    dialled: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TURNKEEPER_STORE_URL", "minio.local/bucket")

    with pytest.raises(
        StoreLocationError,
        match=r"^TURNKEEPER_STORE_URL must be s3://bucket or s3://bucket/prefix$",
    ):
        await connect(address="localhost:1", from_env=False)
    assert dialled == []


async def test_bad_keys_fail_before_dialling(
    dialled: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TURNKEEPER_ENCRYPTION_KEYS", "k1:c2hvcnQ=")

    with pytest.raises(EncryptionKeyError, match="TURNKEEPER_ENCRYPTION_KEYS, entry 1"):
        await connect(address="localhost:1", from_env=False)
    assert dialled == []


async def test_the_configured_telemetry_is_passed_to_every_connect(
    dialled: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin, runtime = object(), object()
    monkeypatch.setattr(connect_telemetry, "_options", {})
    await connect(address="localhost:1", from_env=False)
    connect_telemetry.use_telemetry({"plugins": [plugin], "runtime": runtime})
    await connect(address="localhost:1", from_env=False)

    untraced, traced = dialled
    assert "plugins" not in untraced and "runtime" not in untraced
    assert traced["plugins"] == [plugin] and traced["runtime"] is runtime
