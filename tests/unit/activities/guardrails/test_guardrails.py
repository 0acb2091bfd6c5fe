"""`@turnkeeper.guardrail`: what a function may read, what its verdicts may be, and that one
which cannot answer blocks."""

from __future__ import annotations

import pytest
from turnkeeper.activities.guardrails.builtin import builtin_guardrails
from turnkeeper.activities.guardrails.guardrails import Block, Guardrails, Redact, guardrail


@guardrail(name="echo")
def echo_stage(text: str, stage: str, tool: str | None) -> Block:
    return Block(f"{stage}:{tool}:{text}")


@guardrail
async def sloppy(text: str) -> str:
    return "fine"


@guardrail
def broken(text: str) -> None:
    raise KeyError("a bug")


async def test_a_guardrail_reads_what_it_names() -> None:
    assert await echo_stage.judge("hi", "tool_result", "read_file") == Block(
        "tool_result:read_file:hi"
    )


async def test_a_guardrail_that_cannot_answer_blocks() -> None:
    raised = await broken.judge("hi", "answer", None)
    wrong = await sloppy.judge("hi", "answer", None)

    assert raised == Block("the guardrail raised KeyError: 'a bug'")
    assert isinstance(wrong, Block) and "returned str" in wrong.reason


def test_parameters_other_than_text_stage_and_tool_are_refused() -> None:
    def no_text(stage: str) -> None: ...

    def extra(text: str, user: str) -> None: ...

    for function in (no_text, extra):
        with pytest.raises(TypeError, match="must take `text`"):
            guardrail(function)


def test_names_are_unique_and_the_built_in_ones_are_taken() -> None:
    @guardrail(name="secrets")
    def mine(text: str) -> None: ...

    with pytest.raises(ValueError, match="'secrets' is already given"):
        Guardrails([mine], builtin=builtin_guardrails())
    with pytest.raises(ValueError, match="'echo' is already given"):
        Guardrails([echo_stage, echo_stage])
    with pytest.raises(TypeError, match=r"decorate it with @turnkeeper\.guardrail"):
        Guardrails([lambda text: None])  # type: ignore[list-item]
    assert Guardrails([echo_stage], builtin_guardrails()).names() == ["echo", "secrets", "size_cap"]


def test_a_redaction_says_what_it_left_out() -> None:
    assert Redact("x").reason == "" and Redact("x", "a name").reason == "a name"
