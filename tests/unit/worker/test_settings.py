"""The worker's settings: their defaults, absolute and under the current folder, and what the
environment changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE

from turnkeeper.worker.settings import Settings


def test_settings_defaults_are_absolute_and_relative_to_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({})
    root = tmp_path.resolve()
    assert settings == Settings(
        task_queue=DEFAULT_TASK_QUEUE,
        workspace=root / "workspace",
        data_dir=root / ".turnkeeper",
        store_dir=root / ".turnkeeper" / "store",
    )
    assert settings.dev_server_db == root / ".turnkeeper" / "temporal.sqlite"


def test_settings_read_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_TASK_QUEUE", "my-turns")
    monkeypatch.setenv("AGENT_WORKSPACE", "ws")
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("TURNKEEPER_STORE_DIR", raising=False)
    settings = Settings.from_env()
    root = tmp_path.resolve()
    assert settings.task_queue == "my-turns"
    assert settings.workspace == root / "ws"
    assert settings.store_dir == root / "state" / "store"

    monkeypatch.setenv("TURNKEEPER_STORE_DIR", str(tmp_path / "shared-store"))
    assert Settings.from_env().store_dir == root / "shared-store"


def test_rate_limits_are_read_and_a_bad_entry_stops_the_worker_naming_it() -> None:
    from turnkeeper.contracts.rate_limits import RateLimit

    from turnkeeper.client.settings_error import SettingsError

    env = {"TURNKEEPER_RATE_LIMITS": '{"demo:*": {"requests_per_minute": 3}}'}
    assert Settings.from_env(env).rate_limits == {"demo:*": RateLimit(requests_per_minute=3)}
    assert Settings.from_env({}).rate_limits == {}
    with pytest.raises(SettingsError, match="entry 'demo:x': requests_per_minute"):
        Settings.from_env({"TURNKEEPER_RATE_LIMITS": '{"demo:x": {"requests_per_minute": 0}}'})
