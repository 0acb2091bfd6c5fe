"""Temporal's client configuration files (`temporalio.envconfig`), written for one test: the
profiles the README's Cloud steps describe."""

from __future__ import annotations

from pathlib import Path

import pytest


def use_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, profile: str, toml: str) -> None:
    """Connect through `profile` of a `temporal.toml` holding `toml`, as `TEMPORAL_PROFILE`
    picks it, with no `TEMPORAL_*` variable of the developer's overriding it."""
    config = tmp_path / "temporal.toml"
    config.write_text(toml)
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", profile)
