"""`turnkeeper run` builds and validates its `TurnRequest` on the caller's side: flags, an agent
file, flags over the file, and a one-line error naming the field for each kind of mistake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.console_runs import restore_logging, runner  # noqa: F401 (an autouse fixture)
from turnkeeper.client.requests import RequestError, RunOptions, build_request
from turnkeeper.console.cli import app
from turnkeeper.console.commands import parse_output


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_flags_build_the_request() -> None:
    options = RunOptions(
        input="Summarise the notes",
        agent_id="researcher",
        model="anthropic:claude-sonnet-4-6",
        fallback_models=["anthropic:claude-haiku-4-5"],
        system="Be brief.",
        tools=["read_file", "list_files"],
        max_iterations=3,
        time_budget_ms=60_000,
        cost_budget_usd=0.25,
        require_approval=["*"],
        approval_timeout_s=30,
    )
    request = build_request(options, short_id="abc123")

    assert request.agent.id == "researcher"
    assert request.agent.fallback_models == ["anthropic:claude-haiku-4-5"]
    assert request.agent.tools == ["read_file", "list_files"]
    assert (request.agent.system_prompt, request.agent.max_iterations) == ("Be brief.", 3)
    assert (request.task.id, request.task.input) == ("task-abc123", "Summarise the notes")
    constraints = request.task.constraints
    assert (constraints.time_budget_ms, constraints.cost_budget_usd) == (60_000, 0.25)
    assert constraints.require_approval == ["*"] and constraints.approval_timeout_s == 30


def test_defaults_when_only_the_model_is_given() -> None:
    request = build_request(RunOptions(input="hi", model="demo:workspace-summarizer"), short_id="x")
    assert request.agent.id == "assistant"
    assert request.agent.tools == ["list_files", "read_file", "search_files", "write_file"]
    assert request.task.constraints.allowed_tools is None


def test_flags_override_the_agent_file_and_its_constraints(tmp_path: Path) -> None:
    agent_file = write_json(
        tmp_path / "agent.json",
        {
            "id": "research-assistant",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": "From the file.",
            "tools": ["list_files", "read_file"],
            "constraints": {"cost_budget_usd": 0.5, "require_approval": ["read_file"]},
        },
    )
    options = RunOptions(
        input="go",
        agent_file=agent_file,
        model="anthropic:claude-haiku-4-5",
        cost_budget_usd=0.1,
        task_id="task-7",
    )
    request = build_request(options, short_id="x")

    assert request.agent.id == "research-assistant"  # from the file
    assert request.agent.system_prompt == "From the file."
    assert request.agent.model == "anthropic:claude-haiku-4-5"  # the flag wins
    assert request.task.id == "task-7"
    assert request.task.constraints.cost_budget_usd == 0.1
    assert request.task.constraints.require_approval == ["read_file"]  # kept from the file


def test_the_shipped_agent_files_are_valid() -> None:
    agents = Path(__file__).resolve().parents[3] / "agents"
    for name in ("research-assistant.json", "demo-summarizer.json"):
        request = build_request(RunOptions(input="x", agent_file=agents / name), short_id="x")
        assert "write_file" in request.agent.tools


def test_the_shipped_lead_agent_file_delegates_to_two_specialists() -> None:
    agents = Path(__file__).resolve().parents[3] / "agents"
    options = RunOptions(input="x", agent_file=agents / "research-lead.json")

    request = build_request(options, short_id="x")

    subagents = request.agent.subagents
    assert [spec.name for spec in subagents] == ["researcher", "writer"]
    assert "write_file" in subagents[1].agent.tools
    assert request.task.constraints.require_approval == ["write_file"]  # inherited by the writer
    assert request.task.constraints.cost_budget_usd == 1.0  # the tree's budget


def test_the_shipped_demo_lead_delegates_on_the_offline_model() -> None:
    agents = Path(__file__).resolve().parents[3] / "agents"
    options = RunOptions(input="x", agent_file=agents / "demo-lead.json")

    request = build_request(options, short_id="x")

    assert [spec.name for spec in request.agent.subagents] == ["summarizer"]
    assert request.agent.subagents[0].agent.model == "demo:workspace-summarizer"


def test_history_from_a_report_or_a_message_list_and_external_tools(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": [{"type": "text", "text": "4"}]},
    ]
    report = write_json(tmp_path / "report.json", {"outcome": "completed", "messages": messages})
    plain = write_json(tmp_path / "messages.json", messages)
    tools = write_json(tmp_path / "tools.json", [{"name": "ask_user", "description": "Ask"}])
    for history in (report, plain):
        options = RunOptions(
            input="And 3+3?",
            model="demo:workspace-summarizer",
            history_file=history,
            external_tools_file=tools,
        )
        request = build_request(options, short_id="x")
        assert [m.text() for m in request.history] == ["What is 2+2?", "4"]
        assert [t.name for t in request.external_tools] == ["ask_user"]


@pytest.mark.parametrize(
    ("arguments", "needles"),
    [
        (["hi"], ["agent.model", "--model", "required"]),
        (["--model", "Open AI:gpt-4o", "hi"], ["agent.model", "unknown provider 'Open AI'"]),
        (["--model", "anthropic", "hi"], ["agent.model", "provider:model-name"]),
        (["--model", "demo:workspace-summarizer"], ["task.input", "required"]),
        (
            ["--model", "demo:x", "--max-iterations", "0", "hi"],
            ["agent.max_iterations", "--max-iterations"],
        ),
        (
            ["--model", "demo:x", "--allowed-tool", "delete_everything", "hi"],
            ["task.constraints.allowed_tools", "delete_everything"],
        ),
        (
            ["--model", "anthropic:claude-unknown-9", "--cost-budget-usd", "1", "hi"],
            ["task.constraints.cost_budget_usd", "no price is known"],
        ),
    ],
)
def test_a_bad_flag_exits_2_naming_the_field(arguments: list[str], needles: list[str]) -> None:
    result = runner.invoke(app, ["run", *arguments])

    assert result.exit_code == 2, result.output
    assert "invalid request" in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1  # one line, not a traceback


@pytest.mark.parametrize(
    ("flag", "content", "needles"),
    [
        ("--agent", "{not json", ["--agent", "not valid JSON", "line 1"]),
        ("--agent", "[1, 2]", ["--agent", "expected a JSON object", "got a list"]),
        ("--agent", '{"model": "demo:x", "constraints": 3}', ["'constraints'", "got a number"]),
        ("--agent", '{"id": "a", "model": "demo:x", "colour": "red"}', ["agent.colour"]),
        ("--agent", '{"id": "a"}', ["agent.model", "required"]),
        ("--history", '"hello"', ["--history", "got a string"]),
        ("--history", '[{"role": "robot", "content": "x"}]', ["history.0.role"]),
        ("--external-tools", '{"name": "x"}', ["--external-tools", "expected a JSON list"]),
    ],
)
def test_a_bad_file_exits_2_naming_the_file_or_field(
    tmp_path: Path, flag: str, content: str, needles: list[str]
) -> None:
    path = tmp_path / "input.json"
    path.write_text(content, encoding="utf-8")
    model = [] if flag == "--agent" else ["--model", "demo:workspace-summarizer"]

    result = runner.invoke(app, ["run", *model, flag, str(path), "hi"])

    assert result.exit_code == 2, result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--agent", str(tmp_path / "nope.json"), "hi"])
    assert result.exit_code == 2
    assert "nope.json: no such file" in result.stderr


def test_submitted_output_is_json_when_it_parses_else_text() -> None:
    assert parse_output('{"colour": "blue"}') == {"colour": "blue"}
    assert parse_output("42") == 42
    assert parse_output("blue") == "blue"
    assert parse_output('"42"') == "42"


def test_build_request_raises_a_request_error_without_a_model() -> None:
    with pytest.raises(RequestError, match=r"agent\.model \(--model\): required"):
        build_request(RunOptions(input="hi"), short_id="x")


def test_fallback_and_cache_flags_build_the_request() -> None:
    options = RunOptions(
        input="hi",
        model="anthropic:claude-sonnet-4-6",
        fallback_models=["openai:gpt-4.1", "local:qwen3-8b"],
        fallback_cooldown_s=30,
        fallback_after_attempts=3,
        fallback_on=["auth"],
        prompt_cache=False,
    )
    agent = build_request(options, short_id="x").agent

    assert agent.fallback_models == ["openai:gpt-4.1", "local:qwen3-8b"]
    assert (agent.fallback_cooldown_s, agent.fallback_after_attempts) == (30, 3)
    assert (agent.fallback_on, agent.prompt_cache) == (["auth"], False)
    defaults = build_request(RunOptions(input="hi", model="openai:gpt-4.1"), short_id="x").agent
    assert (defaults.fallback_cooldown_s, defaults.fallback_after_attempts) == (60, 2)
    assert (defaults.fallback_on, defaults.prompt_cache) == ([], True)


@pytest.mark.parametrize(
    ("arguments", "needles"),
    [
        (["--fallback-on", "everything"], ["agent.fallback_on.0", "--fallback-on"]),
        (["--fallback-after-attempts", "0"], ["agent.fallback_after_attempts"]),
        (["--fallback-cooldown-s", "-5"], ["agent.fallback_cooldown_s"]),
    ],
)
def test_a_bad_fallback_flag_exits_2_naming_it(arguments: list[str], needles: list[str]) -> None:
    result = runner.invoke(app, ["run", "--model", "openai:gpt-4.1", *arguments, "hi"])

    assert result.exit_code == 2, result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr
