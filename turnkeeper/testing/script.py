"""The steps of a `ScriptedModel`'s script: `call(tool, **input)`, `reply(text)`, a list of calls
(answered in parallel), or a function of the conversation; and `ScriptError`, which fails a test.

Pure data and checks, no I/O: `scripted_model` plays the steps, `assertions` compares calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic import JsonValue

from turnkeeper.contracts.messages import Message, ToolResultBlock


class ScriptError(AssertionError):
    """The script and the turn disagree: the turn asked for more steps than the script has, a
    step calls a tool the agent does not offer, or results came back unpaired with the calls.

    An `AssertionError`, so that pytest reports it as a failed test with this message.
    """


@dataclass(frozen=True)
class ToolCall:
    """One tool call: a step of a script (`call(...)`) or one the model made (`tool_calls()`).

    Attributes:
        tool: The tool's name.
        input: Its arguments.
    """

    tool: str
    input: dict[str, JsonValue] = field(default_factory=dict)

    def __str__(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.input.items())
        return f"{self.tool}({arguments})"


@dataclass(frozen=True)
class Reply:
    """The model's final answer: the turn ends with `text` as its output."""

    text: str

    def __str__(self) -> str:
        return f"reply({self.text!r})"


@dataclass(frozen=True)
class Conversation:
    """What a function step sees: the model call as the turn sent it.

    Attributes:
        messages: The conversation so far, the task first.
        system: The system prompt.
        tools: The names of the tools offered to the model.
        step: This call's index in the script, from 0.
    """

    messages: list[Message]
    system: str
    tools: list[str]
    step: int

    @property
    def results(self) -> list[ToolResultBlock]:
        """The tool results of the last message (empty on the first call)."""
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "user":
            return []
        return [block for block in last.content if isinstance(block, ToolResultBlock)]


Answer: TypeAlias = ToolCall | Reply | Sequence[ToolCall]
StepFunction: TypeAlias = Callable[[Conversation], "Answer | Awaitable[Answer]"]
Step: TypeAlias = ToolCall | Reply | Sequence[ToolCall] | StepFunction


def call(tool: str, /, **input: JsonValue) -> ToolCall:
    """A step in which the model calls `tool` with `input` (keyword arguments)."""
    if not isinstance(tool, str) or not tool:
        raise TypeError(f"call() takes the tool's name first, got {tool!r}")
    return ToolCall(tool, dict(input))


def reply(text: str) -> Reply:
    """A step in which the model answers `text` and the turn ends."""
    if not isinstance(text, str):
        raise TypeError(f"reply() takes the answer's text, got {type(text).__name__}")
    return Reply(text)


STEP_KINDS = "call(...), reply(...), a list of call(...) or a function of the conversation"


def check_step(step: Any, where: str) -> Step:
    """`step` as a script step, or a TypeError naming `where` it stands and what a step is."""
    if isinstance(step, ToolCall | Reply) or callable(step):
        return step
    if isinstance(step, list | tuple):
        if not step:
            raise TypeError(f"{where} is an empty list: a list step holds one or more call(...)")
        for index, item in enumerate(step):
            if not isinstance(item, ToolCall):
                raise TypeError(
                    f"{where}, item {index}, is {_kind(item)}: a list step holds only call(...)"
                )
        return tuple(step)
    raise TypeError(f"{where} is {_kind(step)}: a step is {STEP_KINDS}")


def answer_calls(answer: Answer) -> list[ToolCall]:
    """The calls of an answer (none for a reply)."""
    if isinstance(answer, Reply):
        return []
    if isinstance(answer, ToolCall):
        return [answer]
    return list(answer)


def describe(step: Step) -> str:
    if isinstance(step, ToolCall | Reply):
        return str(step)
    if isinstance(step, tuple):
        return "[" + ", ".join(map(str, step)) + "]"
    return f"function {getattr(step, '__qualname__', repr(step))}"


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"
