"""The worker's Temporal settings: measured defaults, each overridable from the environment."""

from __future__ import annotations

import pytest
from temporalio.worker import PollerBehaviorSimpleMaximum

from turnkeeper.worker.settings import Settings
from turnkeeper.worker.worker_tuning import WorkerTuning


def test_the_defaults_are_the_measured_ones() -> None:
    options = Settings.from_env({}).tuning.worker_options()

    assert options["max_cached_workflows"] == 1000
    assert options["workflow_task_poller_behavior"] == PollerBehaviorSimpleMaximum(10)
    assert options["activity_task_poller_behavior"] == PollerBehaviorSimpleMaximum(10)
    assert options["max_concurrent_activities"] == 100


def test_write_file_s_cap_is_read_from_the_environment() -> None:
    assert Settings.from_env({}).max_write_bytes == 1024 * 1024
    assert Settings.from_env({"TURNKEEPER_MAX_WRITE_BYTES": "4096"}).max_write_bytes == 4096


def test_each_setting_can_be_overridden() -> None:
    tuning = WorkerTuning.from_env(
        {
            "TURNKEEPER_MAX_CACHED_WORKFLOWS": "0",
            "TURNKEEPER_WORKFLOW_TASK_POLLERS": "4",
            "TURNKEEPER_ACTIVITY_TASK_POLLERS": "",
            "TURNKEEPER_MAX_CONCURRENT_ACTIVITIES": "500",
        }
    )

    assert tuning == WorkerTuning(
        max_cached_workflows=0,
        workflow_task_pollers=4,
        activity_task_pollers=10,
        max_concurrent_activities=500,
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TURNKEEPER_MAX_CACHED_WORKFLOWS", "many", "must be a whole number, got 'many'"),
        ("TURNKEEPER_MAX_CACHED_WORKFLOWS", "-1", "must be at least 0"),
        ("TURNKEEPER_WORKFLOW_TASK_POLLERS", "1", "must be at least 2"),
        ("TURNKEEPER_ACTIVITY_TASK_POLLERS", "0", "must be at least 1"),
        ("TURNKEEPER_MAX_CONCURRENT_ACTIVITIES", "2.5", "must be a whole number"),
        ("TURNKEEPER_MAX_TOOL_RESULT_BYTES", "10", "must be between 1024 and 262144, got 10"),
        ("TURNKEEPER_MAX_WRITE_BYTES", "0", "must be at least 1, got 0"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"{name} {message}"):
        Settings.from_env({name: value})
