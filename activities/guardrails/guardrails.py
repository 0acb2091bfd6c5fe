"""Guardrails: the application's own checks of what goes into a turn and what comes out.

`@turnkeeper.guardrail` turns a function into a `Guardrail`; a worker is given them
(`run_worker(guardrails=[…])`, `TurnkeeperPlugin(guardrails=[…])`) beside the two built in, and
an agent names the ones its turns run (`agent.guardrails`). A guardrail reads a text and returns
None (pass), `turnkeeper.Redact("the text to use instead")` or `turnkeeper.Block("why")`.

It asks for what it reads by parameter name: `text` (the text), `stage` (`input`,
`tool_result` or `answer`) and `tool` (of a tool result, the tool's name; else None). They run
in the `check_guardrails` activity, on the worker, never in the workflow sandbox: they are user
code and may do I/O.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

from turnkeeper.contracts.guardrails import GuardrailStage

_Function = TypeVar("_Function", bound=Callable[..., Any])

# What a guardrail may ask for, by parameter name.
TEXT: Final = "text"
STAGE: Final = "stage"
TOOL: Final = "tool"
_PARAMETERS: Final = (TEXT, STAGE, TOOL)


@dataclass(frozen=True)
class Redact:
    """A guardrail's verdict: use `text` instead of what it read. `reason` says what was left
    out (it is recorded; never quote the redacted part in it)."""

    text: str
    reason: str = ""


@dataclass(frozen=True)
class Block:
    """A guardrail's verdict: the text must not go on. `reason` is recorded, and a blocked tool
    result reaches the model with it."""

    reason: str


Verdict = Redact | Block | None


@dataclass(frozen=True)
class Guardrail:
    """A function that judges a text of a turn.

    Attributes:
        name: what `agent.guardrails` calls it.
        function: the function; sync ones run in a thread.
        parameters: which of `text`, `stage` and `tool` it takes.
    """

    name: str
    function: Callable[..., Any]
    parameters: tuple[str, ...] = (TEXT,)

    async def judge(self, text: str, stage: GuardrailStage, tool: str | None) -> Verdict:
        """The guardrail's verdict on `text`. One that raises, or returns anything but None,
        `Redact` or `Block`, blocks: a check that cannot answer lets nothing through."""
        given = {TEXT: text, STAGE: stage, TOOL: tool}
        kwargs = {name: given[name] for name in self.parameters}
        try:
            if inspect.iscoroutinefunction(self.function):
                verdict = await self.function(**kwargs)
            else:
                verdict = await asyncio.to_thread(self.function, **kwargs)
        except Exception as err:
            return Block(f"the guardrail raised {type(err).__name__}: {err}")
        if verdict is None or isinstance(verdict, Redact | Block):
            return verdict
        return Block(
            f"the guardrail returned {type(verdict).__name__}, not None, "
            "turnkeeper.Redact or turnkeeper.Block"
        )


@overload
def guardrail(function: _Function, /) -> Guardrail: ...


@overload
def guardrail(*, name: str | None = None) -> Callable[[_Function], Guardrail]: ...


def guardrail(
    function: _Function | None = None, /, *, name: str | None = None
) -> Guardrail | Callable[[_Function], Guardrail]:
    """Turn a function (sync or async) into a `Guardrail`; bare or with `name=`.

    Its parameters say what it reads: `text: str`, and optionally `stage: str` and
    `tool: str | None`. It returns None (pass), `turnkeeper.Redact(text)` or
    `turnkeeper.Block(reason)`.

    Raises:
        TypeError: a parameter other than `text`, `stage` and `tool`, or no `text`.
    """

    def wrap(fn: _Function) -> Guardrail:
        guardrail_name = name or fn.__name__
        parameters = tuple(inspect.signature(fn).parameters)
        unknown = [p for p in parameters if p not in _PARAMETERS]
        if unknown or TEXT not in parameters:
            raise TypeError(
                f"guardrail {guardrail_name!r} must take `text` and may take `stage` and `tool` "
                f"(got: {', '.join(parameters) or 'no parameters'})"
            )
        return Guardrail(name=guardrail_name, function=fn, parameters=parameters)

    return wrap(function) if function is not None else wrap


class Guardrails:
    """The guardrails of one worker, by name: the built-in ones, then the application's."""

    def __init__(self, guardrails: Iterable[Guardrail] = (), builtin: Iterable[Guardrail] = ()):
        self._guardrails: dict[str, Guardrail] = {g.name: g for g in builtin}
        for given in guardrails:
            if not isinstance(given, Guardrail):
                shown = getattr(given, "__name__", repr(given))
                raise TypeError(
                    f"{shown} is not a guardrail: decorate it with @turnkeeper.guardrail"
                )
            if given.name in self._guardrails:
                raise ValueError(f"a guardrail named {given.name!r} is already given (or built in)")
            self._guardrails[given.name] = given

    def get(self, name: str) -> Guardrail | None:
        return self._guardrails.get(name)

    def names(self) -> list[str]:
        return sorted(self._guardrails)
