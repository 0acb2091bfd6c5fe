"""`@turnkeeper.evaluator`: the application's own scorers, registered on the worker like output
validators and named in a dataset's `evaluators` like pydantic-evals' built-in ones.

A scorer takes pydantic-evals' `EvaluatorContext` (the case's inputs, expected output and
metadata, the turn's output and duration, and the turn's facts in `ctx.attributes["turnkeeper"]`)
and the arguments the dataset gives it by name, and returns what a pydantic-evals evaluator
returns: a bool (pass/fail), a number, a string, an `EvaluationReason`, or a dict of them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    # Imported where a class is built: every worker imports this module, few run evaluations.
    from pydantic_evals.evaluators import Evaluator

_Function = TypeVar("_Function", bound=Callable[..., Any])


@dataclass(frozen=True)
class RegisteredEvaluator:
    """A function that scores a case, and the pydantic-evals evaluator class a dataset's spec
    of that name is loaded into."""

    name: str
    function: Callable[..., Any] | None

    def evaluator_type(self) -> type[Evaluator]:
        """An `Evaluator` subclass named `name` that calls the function (None: a stand-in the
        console loads a dataset with; the worker that runs the case has the function)."""
        return named_evaluator(self.name, self.function)


def named_evaluator(name: str, function: Callable[..., Any] | None) -> type[Evaluator]:
    """The pydantic-evals class for a scorer named `name`: built per name, since pydantic-evals
    finds a dataset's evaluators by class name and passes their arguments to the class."""

    from pydantic_evals.evaluators import Evaluator, EvaluatorSpec

    async def evaluate(self: Any, ctx: Any) -> Any:
        if function is None:
            raise RuntimeError(f"scorer {name!r} runs on the worker")
        if inspect.iscoroutinefunction(function):
            return await function(ctx, **self.arguments)
        return await asyncio.to_thread(function, ctx, **self.arguments)

    def __init__(self: Any, **arguments: Any) -> None:
        self.arguments = arguments

    namespace = {
        "__init__": __init__,
        "evaluate": evaluate,
        "get_serialization_name": classmethod(lambda cls: name),
        "get_default_evaluation_name": lambda self: name,
        "build_serialization_arguments": lambda self: dict(self.arguments),
        "as_spec": lambda self: EvaluatorSpec(name=name, arguments=dict(self.arguments) or None),
        "__repr__": lambda self: f"{name}({self.arguments})",
    }
    # pydantic-evals takes dataclasses only; ours keeps its own `__init__` (any arguments).
    return dataclasses.dataclass(init=False, repr=False, eq=False)(
        type(name, (Evaluator,), namespace)
    )


@overload
def evaluator(function: _Function, /) -> RegisteredEvaluator: ...


@overload
def evaluator(*, name: str | None = None) -> Callable[[_Function], RegisteredEvaluator]: ...


def evaluator(
    function: _Function | None = None, /, *, name: str | None = None
) -> RegisteredEvaluator | Callable[[_Function], RegisteredEvaluator]:
    """Turn a function (sync or async) into a scorer a dataset names; bare or with `name=`.

    Raises:
        TypeError: its first parameter is not the context (it takes none).
    """

    def wrap(fn: _Function) -> RegisteredEvaluator:
        if not inspect.signature(fn).parameters:
            raise TypeError(f"evaluator {fn.__name__!r} must take the EvaluatorContext first")
        return RegisteredEvaluator(name=name or fn.__name__, function=fn)

    return wrap(function) if function is not None else wrap


class Evaluators:
    """The registered scorers of one worker, by name."""

    def __init__(self, scorers: Iterable[RegisteredEvaluator] = ()) -> None:
        self._scorers: dict[str, RegisteredEvaluator] = {}
        for scorer in scorers:
            if not isinstance(scorer, RegisteredEvaluator):
                shown = getattr(scorer, "__name__", repr(scorer))
                raise TypeError(
                    f"{shown} is not an evaluator: decorate it with @turnkeeper.evaluator"
                )
            if scorer.name in self._scorers:
                raise ValueError(f"an evaluator named {scorer.name!r} is already given")
            self._scorers[scorer.name] = scorer

    def types(self) -> list[type[Evaluator]]:
        return [scorer.evaluator_type() for scorer in self._scorers.values()]

    def names(self) -> list[str]:
        return sorted(self._scorers)
