"""Skills in the worker's wiring: `TURNKEEPER_SKILLS_DIR`, `TurnkeeperPlugin(skills=…)` and
`run_worker(skills=…)` merge the folder's skills with those in code, add `load_skill` and
`read_skill_file` when there is one, register `describe_skills` always, and refuse at start what
cannot work."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client
from turnkeeper.activities.tools.registry import ToolRegistry, worker_tool

import turnkeeper
from tests.unit.activities.skills.skill_folders import REFUND_POLICY, skill_folder
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.worker.plugin import TurnkeeperPlugin
from turnkeeper.worker.settings import Settings
from turnkeeper.worker.wiring import build_activities, install_skills

TONE = turnkeeper.Skill("tone", "How we write to customers.", "Be brief and kind.")


@worker_tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return order_id


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    skill_folder(tmp_path / "skills", "refund-policy", REFUND_POLICY)
    return Settings(
        task_queue="turns",
        workspace=tmp_path / "workspace",
        data_dir=tmp_path / "data",
        store_dir=tmp_path / "store",
        skills_dir=tmp_path / "skills",
    )


def test_the_folders_skills_and_those_in_code_are_served_with_the_two_tools(
    settings: Settings,
) -> None:
    registry = ToolRegistry([refund])
    catalog = install_skills(settings, [TONE], registry)
    assert catalog.names() == ["refund-policy", "tone"]
    assert registry.names() == ["load_skill", "read_skill_file", "refund"]


def test_a_worker_without_skills_has_no_skill_tools_but_still_answers_describe_skills(
    settings: Settings,
) -> None:
    settings = dataclasses.replace(settings, skills_dir=None)
    registry = ToolRegistry([refund])
    assert len(install_skills(settings, [], registry)) == 0
    assert registry.names() == ["refund"]
    names = [activity._Definition.must_from_callable(a).name for a in build_activities(settings)]
    assert "describe_skills" in names


def test_a_tool_of_the_application_named_load_skill_clashes_loudly(settings: Settings) -> None:
    @worker_tool(name="load_skill")
    def mine(name: str) -> str:
        """Not the built-in."""
        return name

    with pytest.raises(ValueError, match="'load_skill' is already registered"):
        install_skills(settings, [], ToolRegistry([refund, mine]))


def test_the_plugin_refuses_a_skills_dir_it_cannot_read_naming_the_variable(
    settings: Settings, tmp_path: Path
) -> None:
    settings = dataclasses.replace(settings, skills_dir=tmp_path / "missing")
    with pytest.raises(SettingsError, match=r"^TURNKEEPER_SKILLS_DIR: the skills folder"):
        TurnkeeperPlugin([refund], settings=settings, keyring=Keyring())


def test_the_plugin_refuses_a_skill_in_code_named_like_the_folders(settings: Settings) -> None:
    twin = turnkeeper.Skill("refund-policy", "Again.", "Other text.")
    with pytest.raises(ValueError, match="two skills are named 'refund-policy'"):
        TurnkeeperPlugin([refund], skills=[twin], settings=settings, keyring=Keyring())


def test_the_plugin_registers_describe_skills(settings: Settings) -> None:
    plugin = TurnkeeperPlugin([refund], skills=[TONE], settings=settings, keyring=Keyring())
    client = Client(service_client=object(), plugins=[plugin])  # type: ignore[arg-type]
    config = plugin.configure_worker(
        {"client": client, "task_queue": "turns", "workflows": [], "activities": []}  # type: ignore[typeddict-item]
    )
    names = [activity._Definition.must_from_callable(a).name for a in config["activities"]]
    assert "describe_skills" in names


async def test_run_worker_refuses_what_is_not_a_skill_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TURNKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.delenv("TURNKEEPER_SKILLS_DIR", raising=False)
    with pytest.raises(TypeError, match="'tone' is not a skill"):
        await turnkeeper.run_worker(skills=["tone"], address="127.0.0.1:1")  # type: ignore[list-item]


def test_settings_read_the_skills_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings.from_env({"TURNKEEPER_SKILLS_DIR": "skills"}).skills_dir == (
        tmp_path.resolve() / "skills"
    )
    assert Settings.from_env({"TURNKEEPER_SKILLS_DIR": ""}).skills_dir is None


def test_turnkeeper_skill_is_the_public_name() -> None:
    assert "Skill" in turnkeeper.__all__
    assert TONE.folder is None and TONE.tools == ()


def test_the_plugin_refuses_a_policy_file_that_does_not_parse(
    settings: Settings, tmp_path: Path
) -> None:
    bad = tmp_path / "tools.cedar"
    bad.write_text("permit(principal, action, resource);\n\nforbid(principal action);\n")
    settings = dataclasses.replace(settings, policy_files=(bad,))
    with pytest.raises(SettingsError, match=r"^TURNKEEPER_POLICY_FILE: .*tools\.cedar:3: "):
        TurnkeeperPlugin([refund], settings=settings, keyring=Keyring())
