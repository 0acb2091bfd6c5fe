"""Output validators: the application's own checks of a turn's final answer.

`@turnkeeper.output_validator` turns a function into an `OutputValidator`; a worker is given them
(`run_worker(output_validators=[…])`, `TurnkeeperPlugin(output_validators=[…])`) and an agent
names the ones its turns run (`agent.output_validators`). A validator returns nothing to accept
the answer or raises `OutputRejected("why")`: the reason goes back to the model as a correction.

A validator asks for what it reads by parameter name: `text` (the answer's text) and `output`
(with `agent.output_schema`, the answer's JSON value, validated into the parameter's type when
it has one, e.g. a pydantic model). They run in the `validate_output` activity, on the worker,
never in the workflow sandbox: they are user code and may do I/O.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, get_type_hints, overload

from pydantic import TypeAdapter, ValidationError
from turnkeeper.contracts.output_validation import FinalAnswer

_Function = TypeVar("_Function", bound=Callable[..., Any])

# What a validator may ask for, by parameter name.
TEXT: Final = "text"
OUTPUT: Final = "output"
_UNTYPED: Final = (inspect.Parameter.empty, Any)


class OutputRejected(Exception):
    """Raise it in an output validator to reject the final answer: `reason` goes back to the
    model, which answers again (each rejection costs one of `agent.max_iterations`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OutputValidatorFailure(Exception):
    """A validator could not judge the answer: it raised something other than `OutputRejected`,
    or it reads `output` on a turn without `output_schema`. A defect of the application."""


@dataclass(frozen=True)
class OutputValidator:
    """A function that checks a turn's final answer.

    Attributes:
        name: what `agent.output_validators` calls it.
        function: the function; sync ones run in a thread.
        wants_text, wants_output: which of `text` and `output` it takes.
        output_type: the type `output` is validated into; None: the JSON value as it is.
    """

    name: str
    function: Callable[..., Any]
    wants_text: bool = False
    wants_output: bool = False
    output_type: Any = None

    async def check(self, answer: FinalAnswer) -> None:
        """Runs the validator on `answer`.

        Raises:
            OutputRejected: the validator rejected it, or its `output` does not fit the type.
            OutputValidatorFailure: the validator is at fault (the message says how).
        """
        kwargs: dict[str, Any] = {}
        if self.wants_text:
            kwargs[TEXT] = answer.text
        if self.wants_output:
            kwargs[OUTPUT] = self._output(answer)
        try:
            if inspect.iscoroutinefunction(self.function):
                await self.function(**kwargs)
            else:
                await asyncio.to_thread(self.function, **kwargs)
        except OutputRejected:
            raise
        except Exception as err:
            raise OutputValidatorFailure(
                f"output validator {self.name!r} raised {type(err).__name__}: {err}"
            ) from err

    def _output(self, answer: FinalAnswer) -> Any:
        if not answer.structured:
            raise OutputValidatorFailure(
                f"output validator {self.name!r} reads `output`, but the agent has no "
                "output_schema: give the agent one, or read `text`"
            )
        if self.output_type is None:
            return answer.structured_output
        try:
            return _adapter(self.output_type).validate_python(answer.structured_output)
        except ValidationError as err:
            # The schema let through what the type's own checks refuse: the model corrects it.
            kind = _type_name(self.output_type)
            raise OutputRejected(f"the answer does not fit {kind}: {err}") from None


@overload
def output_validator(function: _Function, /) -> OutputValidator: ...


@overload
def output_validator(*, name: str | None = None) -> Callable[[_Function], OutputValidator]: ...


def output_validator(
    function: _Function | None = None, /, *, name: str | None = None
) -> OutputValidator | Callable[[_Function], OutputValidator]:
    """Turn a function (sync or async) into an `OutputValidator`; bare or with `name=`.

    Its parameters say what it reads: `text: str` (the answer's text) and/or `output` (with
    `agent.output_schema`, the JSON value, validated into the annotation when there is one).

    Raises:
        TypeError: a parameter other than `text` and `output`, or none of them.
    """

    def wrap(fn: _Function) -> OutputValidator:
        validator_name = name or fn.__name__
        parameters = inspect.signature(fn).parameters
        unknown = [p for p in parameters if p not in (TEXT, OUTPUT)]
        if unknown or not parameters:
            raise TypeError(
                f"output validator {validator_name!r} must take `text` and/or `output` "
                f"(got: {', '.join(parameters) or 'no parameters'})"
            )
        hints = get_type_hints(fn)
        output_type = hints.get(OUTPUT, inspect.Parameter.empty)
        return OutputValidator(
            name=validator_name,
            function=fn,
            wants_text=TEXT in parameters,
            wants_output=OUTPUT in parameters,
            output_type=None if output_type in _UNTYPED else output_type,
        )

    return wrap(function) if function is not None else wrap


class OutputValidators:
    """The output validators of one worker, by name."""

    def __init__(self, validators: Iterable[OutputValidator] = ()) -> None:
        self._validators: dict[str, OutputValidator] = {}
        for validator in validators:
            if not isinstance(validator, OutputValidator):
                shown = getattr(validator, "__name__", repr(validator))
                raise TypeError(
                    f"{shown} is not an output validator: decorate it with "
                    "@turnkeeper.output_validator"
                )
            if validator.name in self._validators:
                raise ValueError(f"an output validator named {validator.name!r} is already given")
            self._validators[validator.name] = validator

    def get(self, name: str) -> OutputValidator | None:
        return self._validators.get(name)

    def names(self) -> list[str]:
        return sorted(self._validators)


def _adapter(output_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(output_type)


def _type_name(output_type: Any) -> str:
    return getattr(output_type, "__name__", str(output_type))
