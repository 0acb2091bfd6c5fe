"""The agents folder of `turnkeeper serve --agents`: each file one tool, checked at start with
the request's own checks; a file that cannot be served named with its field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from turnkeeper.console.cli import app
from turnkeeper.http.mcp.agents import INPUT_SCHEMA, AgentFileError, load_agents

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}


def agent_file(folder: Path, name: str, content: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_each_file_is_a_tool_named_by_its_id(tmp_path: Path) -> None:
    agent_file(tmp_path, "a", {"id": "helper", "model": "anthropic:m", "description": "Helps."})
    agent_file(tmp_path, "b", {"id": "titler", "model": "anthropic:m", "output_schema": SCHEMA})
    (tmp_path / "notes.txt").write_text("not an agent")

    agents = load_agents(tmp_path)

    helper, titler = agents["helper"].tool(), agents["titler"].tool()
    assert sorted(agents) == ["helper", "titler"]
    assert helper.description == "Helps." and helper.input_schema == INPUT_SCHEMA
    assert helper.output_schema is None and titler.output_schema == SCHEMA
    assert titler.description == "Runs the agent 'titler' on a task and answers."
    assert helper.execution is not None and helper.execution.task_support == "optional"


def test_a_turn_is_the_agent_file_with_the_task(tmp_path: Path) -> None:
    constraints = {"require_approval": ["write_file"], "cost_budget_usd": 1}
    agent_file(
        tmp_path,
        "a",
        {"id": "helper", "model": "anthropic:claude-sonnet-4-6", "constraints": constraints},
    )
    helper = load_agents(tmp_path)["helper"]

    workflow_id, request = helper.turn("Summarise it.")
    other_id, _ = helper.turn("Again.")

    assert re.fullmatch(r"mcp-helper-[0-9a-f]{32}", workflow_id) and other_id != workflow_id
    assert request.task.input == "Summarise it." and request.agent.id == "helper"
    assert request.task.constraints.require_approval == ["write_file"]
    assert request.task.constraints.cost_budget_usd == 1 and request.tenant is None


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "not valid JSON"),
        ([1, 2], "expected a JSON object"),
        ({"id": "a", "model": "nomodel"}, "agent.model"),
        ({"id": "a", "model": "anthropic:m", "tools": "x"}, "agent.tools"),
        ({"id": "a", "model": "anthropic:m", "colour": "red"}, "agent.colour"),
        ({"id": "a", "model": "anthropic:m", "description": 3}, "'description' must be a string"),
        ({"id": "a", "model": "anthropic:m", "constraints": "x"}, "'constraints' must be"),
        (
            {"id": "a", "model": "anthropic:m", "constraints": {"cost_budget_usd": -1}},
            "task.constraints.cost_budget_usd",
        ),
        ({"id": "no spaces", "model": "anthropic:m"}, "id: 'no spaces' cannot name an MCP tool"),
        ({"id": "a", "model": "anthropic:m", "output_schema": {"type": "string"}}, "output_schema"),
    ],
)
def test_a_file_that_cannot_be_served_is_named_with_its_field(
    tmp_path: Path, content: Any, said: str
) -> None:
    agent_file(tmp_path, "good", {"id": "good", "model": "anthropic:m"})
    path = agent_file(tmp_path, "bad", content)

    with pytest.raises(AgentFileError) as refused:
        load_agents(tmp_path)

    assert str(path) in str(refused.value) and said in str(refused.value)


def test_two_files_of_one_id_and_a_folder_without_agents_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentFileError, match="no such folder"):
        load_agents(tmp_path / "missing")
    with pytest.raises(AgentFileError, match=r"no agent file \(\*\.json\)"):
        load_agents(tmp_path)
    agent_file(tmp_path, "a", {"id": "same", "model": "anthropic:m"})
    agent_file(tmp_path, "b", {"id": "same", "model": "anthropic:m"})
    with pytest.raises(AgentFileError, match=r"b\.json: id: 'same' is already the id of .*a\.json"):
        load_agents(tmp_path)


def test_serve_and_mcp_stop_at_start_on_a_file_that_cannot_be_served(tmp_path: Path) -> None:
    path = agent_file(tmp_path / "agents", "bad", {"id": "bad", "model": "nomodel"})
    folder = str(tmp_path / "agents")
    tokens = str(tmp_path / "tokens.json")

    # Before Temporal is reached: no server runs at this address.
    nowhere = ["--address", "127.0.0.1:9"]
    served = CliRunner().invoke(app, ["serve", "--tokens", tokens, "--agents", folder, *nowhere])
    local = CliRunner().invoke(app, ["mcp", "--agents", folder, "--as", "me", *nowhere])

    for done in (served, local):
        assert done.exit_code == 2, done.output
        assert f"{path}: agent.model" in done.output.replace("\n", "")
