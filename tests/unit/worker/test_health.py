"""The worker's health port setting: unset means no port, a number is trimmed, anything else is
refused naming TURNKEEPER_HEALTH_PORT. (The port served by a running worker:
tests/test_worker_operations.py.)"""

from __future__ import annotations

import pytest

from turnkeeper.client.settings_error import SettingsError
from turnkeeper.worker.health import health_port


def test_health_port_setting() -> None:
    assert health_port({}) is None
    assert health_port({"TURNKEEPER_HEALTH_PORT": " 8081 "}) == 8081
    for wrong in ("http", "-1", "70000"):
        with pytest.raises(SettingsError, match="TURNKEEPER_HEALTH_PORT"):
            health_port({"TURNKEEPER_HEALTH_PORT": wrong})
