"""`TurnRequest` refuses each kind of wrong field with a message naming it, before any turn
starts: one case per kind, checked on the model itself, no server."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from turnkeeper.contracts.turn import TurnRequest, split_model

from tests.unit.builders import constraints, request, request_json

HISTORY = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def refusal(payload: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as raised:
        TurnRequest.model_validate(payload)
    return str(raised.value)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"task": {"id": "t", "input": "x"}}, "agent\n  Field required"),
        (request_json(agent={"id": ""}), "agent.id"),
        (request_json(agent={"model": "claude-sonnet-4-6"}), "must be 'provider:model-name'"),
        (request_json(agent={"model": "anthropic:"}), "must be 'provider:model-name'"),
        (request_json(agent={"model": "Bad Provider:m"}), "unknown provider 'Bad Provider'"),
        (request_json(agent={"fallback_models": ["nope"]}), "agent.fallback_models"),
        (request_json(agent={"max_iterations": 0}), "agent.max_iterations"),
        (request_json(agent={"max_iterations": 10_001}), "agent.max_iterations"),
        (request_json(agent={"max_tokens": 0}), "agent.max_tokens"),
        (request_json(agent={"fallback_after_attempts": 7}), "agent.fallback_after_attempts"),
        (request_json(agent={"fallback_cooldown_s": -1}), "agent.fallback_cooldown_s"),
        (request_json(agent={"fallback_on": ["rate_limit"]}), "agent.fallback_on.0"),
        (request_json(agent={"approvers": ["ann", "ann"]}), "repeated: ['ann']"),
        (request_json(agent={"approvers": [{"name": ""}]}), "agent.approvers.0.approver.name"),
        (
            request_json(agent={"approvers": [{"name": "ann", "public_key": "ssh-rsa AAAA"}]}),
            "agent.approvers.0.approver.public_key",
        ),
        (
            request_json(agent={"price": {"input_per_mtok": -1, "output_per_mtok": 1}}),
            "agent.price.input_per_mtok",
        ),
        (request_json(agent={"temperature": 0.2}), "agent.temperature\n  Extra inputs"),
        (request_json(agent={"a2a_agents": ["has space"]}), "agent.a2a_agents.0.name"),
        (
            request_json(agent={"a2a_agents": [{"name": "r", "url": "http://x"}]}),
            "a2a_agents.0.url",
        ),
        (request_json(agent={"a2a_agents": ["r", {"name": "r"}]}), "names the A2A agent 'r' twice"),
        (request_json(task={"input": ""}), "task.input"),
        (request_json(task={"id": ""}), "task.id"),
        (request_json(task=constraints(time_budget_ms=0)), "task.constraints.time_budget_ms"),
        (request_json(task=constraints(cost_budget_usd=0)), "task.constraints.cost_budget_usd"),
        (
            request_json(task=constraints(max_tool_interactions=-1)),
            "task.constraints.max_tool_interactions",
        ),
        (
            request_json(task=constraints(approval_timeout_s=0)),
            "task.constraints.approval_timeout_s",
        ),
        (
            request_json(task=constraints(max_argument_corrections=-1)),
            "task.constraints.max_argument_corrections",
        ),
        (
            request_json(task=constraints(on_budget_exhausted="extend")),
            "task.constraints.on_budget_exhausted",
        ),
        (request_json(external_tools=[{"name": "has space"}]), "external_tools.0.name"),
        (request_json(external_tools=[{"name": "x" * 65}]), "external_tools.0.name"),
        (request_json(external_tools=[{"name": "ask"}, {"name": "ask"}]), "repeated: ['ask']"),
        (request_json(history=[{"role": "system", "content": "x"}]), "history.0.role"),
        (
            request_json(history=[{"role": "user", "content": [{"type": "image"}]}]),
            "history.0.content.0",
        ),
        (
            request_json(
                history=[{"role": "user", "content": [{"type": "tool_use", "id": "", "name": "x"}]}]
            ),
            "history.0.content.0.tool_use.id",
        ),
        (request_json(history=HISTORY, history_ref="ref-1"), "give history or history_ref"),
        (request_json(history_ref=""), "history_ref"),
        (
            request_json(history_ref="ref-1", history_compaction={"left_out": 2}),
            "history_compaction: needs agent.compaction",
        ),
        (request_json(history_compaction={"left_out": 2}), "needs the history_ref"),
        (request_json(surprise=True), "surprise\n  Extra inputs"),
    ],
)
def test_each_wrong_field_is_refused_by_name(payload: dict[str, Any], says: str) -> None:
    assert says in refusal(payload)


def test_a_minimal_request_takes_the_documented_defaults() -> None:
    made = request()
    assert made.agent.tools == ["list_files", "read_file", "search_files", "write_file"]
    assert (made.agent.max_iterations, made.agent.max_tokens) == (10, 4096)
    assert made.task.constraints.on_budget_exhausted == "fail"
    assert made.task.constraints.max_argument_corrections == 3


def test_a_named_endpoint_is_a_valid_provider() -> None:
    assert request(agent={"model": "local-llm:qwen3"}).agent.model == "local-llm:qwen3"
    assert split_model("local-llm:qwen3:8b") == ("local-llm", "qwen3:8b")


def test_plain_text_content_is_one_text_block() -> None:
    made = request(history=HISTORY)
    assert made.history[0].content[0].type == "text"
    assert made.history[1].text() == "hello"


def test_require_approval_star_covers_every_tool() -> None:
    assert request(task=constraints(require_approval=["*"])).task.constraints.needs_approval("x")
    picky = request(task=constraints(require_approval=["write_file"])).task.constraints
    assert picky.needs_approval("write_file") and not picky.needs_approval("read_file")


def test_the_summary_is_one_short_line() -> None:
    made = request(task={"input": "\n\n  " + "word " * 60 + "\nsecond line"})
    summary = made.summary()
    assert summary.startswith("unit-agent · unit-task · word word")
    assert summary.endswith("…")
    assert "\n" not in summary and "second line" not in summary
