"""`TURNKEEPER_SANDBOX_*`: the operator's maxima, and what a turn's `agent.sandbox` may ask."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from turnkeeper.activities.sandbox.limits import DEFAULT_IMAGE, SandboxLimits
from turnkeeper.contracts.sandbox import SandboxSpec
from turnkeeper.contracts.turn import AgentSpec

from turnkeeper.client.settings_error import SettingsError
from turnkeeper.worker.sandbox_settings import sandbox_limits


def test_defaults_and_overrides() -> None:
    assert sandbox_limits({}) == SandboxLimits()
    limits = sandbox_limits(
        {
            "TURNKEEPER_SANDBOX_MAX_TIMEOUT_S": "20",
            "TURNKEEPER_SANDBOX_MAX_MEMORY_MB": "512",
            "TURNKEEPER_SANDBOX_ALLOW_NETWORK": "yes",
            "TURNKEEPER_SANDBOX_IMAGE": "/usr:/opt/python",
            "TURNKEEPER_SANDBOX_DISK_MB": "16",
        }
    )
    assert (limits.max_timeout_s, limits.max_memory_mb, limits.allow_network) == (20, 512, True)
    assert (limits.image, limits.disk_mb) == (("/usr", "/opt/python"), 16)
    assert SandboxLimits().image == DEFAULT_IMAGE


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("TURNKEEPER_SANDBOX_MAX_TIMEOUT_S", "0", "between 1 and 3600"),
        ("TURNKEEPER_SANDBOX_MAX_MEMORY_MB", "lots", "must be a whole number"),
        ("TURNKEEPER_SANDBOX_ALLOW_NETWORK", "maybe", "must be on or off"),
        ("TURNKEEPER_SANDBOX_IMAGE", "/usr:lib", "absolute paths"),
    ],
)
def test_a_bad_variable_is_named(variable: str, value: str, said: str) -> None:
    with pytest.raises(SettingsError, match=said) as refused:
        sandbox_limits({variable: value})
    assert variable in str(refused.value)


def test_a_spec_above_the_workers_maxima_is_refused_naming_the_variable() -> None:
    limits = SandboxLimits(max_timeout_s=10, max_memory_mb=128)
    assert limits.problem(SandboxSpec(timeout_s=10, memory_mb=128)) is None
    fits = {"timeout_s": 10, "memory_mb": 128}
    for asked, variable in [
        ({"timeout_s": 11}, "TURNKEEPER_SANDBOX_MAX_TIMEOUT_S"),
        ({"memory_mb": 256}, "TURNKEEPER_SANDBOX_MAX_MEMORY_MB"),
        ({"network": True}, "TURNKEEPER_SANDBOX_ALLOW_NETWORK"),
    ]:
        assert variable in (limits.problem(SandboxSpec(**(fits | asked))) or "")


@pytest.mark.parametrize(
    "sandbox",
    [{"timeout_s": 0}, {"timeout_s": 7200}, {"memory_mb": 8}, {"network": "sometimes"}],
)
def test_a_request_outside_the_fixed_bounds_does_not_validate(sandbox: dict) -> None:
    with pytest.raises(ValidationError) as refused:
        AgentSpec(id="a", model="anthropic:claude-sonnet-4-6", sandbox=sandbox)
    assert "sandbox." in str(refused.value)


def test_an_agent_without_a_sandbox_serializes_as_before() -> None:
    agent = AgentSpec(id="a", model="anthropic:claude-sonnet-4-6")
    assert "sandbox" not in agent.model_dump(mode="json")
