"""Forking a turn without a server: which messages come before an iteration, the forked request,
the wrong inputs of `turnkeeper fork` and `turnkeeper replay`, and a request whose history
keeps its block types on the way to the server."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.contracts.turn import TurnRequest
from turnkeeper.contracts.turn_ids import TURN_ID_MAX_CHARS, turn_id_problem
from typer.testing import CliRunner

from turnkeeper.client.fork import (
    ForkChanges,
    ForkError,
    answers,
    conversation_before,
    forked_request,
)
from turnkeeper.client.turns import request_payload, suffixed_turn_id
from turnkeeper.console.cli import app


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def asked(call_id: str) -> Message:
    return Message(
        role="assistant", content=[ToolUseBlock(id=call_id, name="list_files", input={})]
    )


def results(call_id: str) -> Message:
    return Message(role="user", content=[ToolResultBlock(tool_use_id=call_id, content="a.md")])


EARLIER = [user("Hello"), Message(role="assistant", content=[TextBlock(text="Hi.")])]
TRANSCRIPT = [
    *EARLIER,
    user("Summarise"),
    asked("c1"),
    results("c1"),
    asked("c2"),
    results("c2"),
    Message(role="assistant", content=[TextBlock(text="Done.")]),
]


def request(**fields: Any) -> TurnRequest:
    return TurnRequest.model_validate(
        {
            "agent": {"id": "a", "model": "anthropic:claude-sonnet-4-6", "system_prompt": "Be."},
            "task": {"id": "t", "input": "Summarise"},
            "history": [m.model_dump(mode="json") for m in EARLIER],
            **fields,
        }
    )


def test_the_conversation_before_an_iteration_ends_with_the_results_before_it() -> None:
    assert conversation_before(TRANSCRIPT, len(EARLIER), 2) == TRANSCRIPT[:5]
    assert conversation_before(TRANSCRIPT, len(EARLIER), 3) == TRANSCRIPT[:7]
    # The answer in the earlier history is not one of this turn's iterations.
    assert conversation_before(TRANSCRIPT, len(EARLIER), 4) is None
    assert answers(TRANSCRIPT, len(EARLIER)) == 3


def test_a_forked_request_changes_only_what_is_asked() -> None:
    forked = forked_request(
        request(), TRANSCRIPT[:5], ForkChanges(model="openai:gpt-4.1", system_prompt="New.")
    )
    assert forked.history == TRANSCRIPT[:5]
    assert (forked.agent.model, forked.agent.system_prompt) == ("openai:gpt-4.1", "New.")
    assert forked.task == request().task
    kept = forked_request(request(), TRANSCRIPT[:5], ForkChanges())
    assert kept.agent == request().agent


def test_a_fork_at_the_start_keeps_the_request_s_own_history() -> None:
    stored = request(history=[], history_ref="conv-1")
    assert forked_request(stored, None, ForkChanges()) == stored
    assert forked_request(request(), None, ForkChanges()) == request()


def test_a_fork_that_does_not_validate_names_the_field() -> None:
    with pytest.raises(ForkError, match=r"agent\.model"):
        forked_request(request(), TRANSCRIPT[:5], ForkChanges(model="nocolon"))


def test_the_payload_sent_keeps_the_history_block_types() -> None:
    payload = request_payload(request())
    assert payload["history"][0]["content"][0] == {"type": "text", "text": "Hello"}
    assert TurnRequest.model_validate(payload) == request()
    assert "max_iterations" not in payload["agent"]  # defaults still left to the workflow


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["replay"], "give --workflow-id (repeatable) or --query, not both"),
        (["replay", "--workflow-id", "a", "--query", "x"], "not both"),
        (["replay", "--query", "x", "--limit", "0"], "--limit"),
    ],
)
def test_replay_refuses_wrong_arguments_before_connecting(args: list[str], problem: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert problem in " ".join(result.output.split())


def test_fork_refuses_an_iteration_below_one() -> None:
    result = CliRunner().invoke(
        app, ["fork", "some-turn", "--at-iteration", "0", "--address", "127.0.0.1:1"]
    )
    assert result.exit_code == 2
    assert "--at-iteration" in result.output


def test_a_fork_of_a_sub_agents_turn_is_a_root_turn() -> None:
    child = request(parent={"workflow_id": "lead", "call_id": "toolu_1", "depth": 1})
    assert forked_request(child, None, ForkChanges()).parent is None
    assert forked_request(child, TRANSCRIPT[:5], ForkChanges()).parent is None


@pytest.mark.parametrize(
    ("original", "fork_id"),
    [
        ("trial-1", "trial-1-fork-2"),
        ("lead/writer-1", "lead-writer-1-fork-2"),  # a sub-agent's turn: no '/' in its fork
        ("old id with spaces", "old-id-with-spaces-fork-2"),
    ],
)
def test_a_forks_default_id_is_a_turn_id(original: str, fork_id: str) -> None:
    assert suffixed_turn_id(original, "fork-2") == fork_id
    assert turn_id_problem(fork_id) is None
    assert len(suffixed_turn_id("x" * 300, "fork-2")) == TURN_ID_MAX_CHARS
