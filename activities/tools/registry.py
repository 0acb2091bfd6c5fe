"""Worker tools: typed Python functions the model can call.

A tool is an ordinary function whose keyword parameters (type hints, defaults and
`Annotated[..., Field(description=...)]` docs) become the JSON schema the model sees, so the schema
and the code cannot drift apart. `run_tool` validates the model's arguments against that schema
before the function runs and turns every complaint into text the model can act on.

A parameter annotated `ToolContext` is not an argument of the model: `run_tool` fills it with the
call's identity (turn, call, idempotency key, attempt), and it never appears in the schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_type_hints, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from temporalio import activity
from turnkeeper.activities.tools.image_results import ToolOutput, output_of
from turnkeeper.contracts.mcp import is_mcp_tool_name
from turnkeeper.contracts.tools import ToolDefinition

_Function = TypeVar("_Function", bound=Callable[..., Any])

# A local call keeps its turn's workflow task open (the SDK heartbeats it); past this, a call is
# no longer cheap and belongs on the server's activity queue.
LOCAL_TOOL_MAX_TIMEOUT_S = 30.0
DEFAULT_TOOL_TIMEOUT_S = 60.0

# Schema keys whose values are maps of name -> schema, so that a parameter that happens to be
# called "title" keeps its name while pydantic's generated titles are dropped.
_SCHEMA_MAPS = frozenset({"properties", "$defs", "patternProperties"})


@dataclass(frozen=True)
class ToolContext:
    """Who is calling: declare a parameter of this type to receive it.

    Attributes:
        turn_id: the workflow id of the turn.
        call_id: the model's `tool_use` id.
        attempt: the activity attempt, from 1; above 1 when Temporal retries the call (a lost
            worker, an infrastructure error).
    """

    turn_id: str
    call_id: str
    attempt: int = 1
    # The activity's event loop: a sync tool runs in a thread, and a heartbeat must be sent from
    # the loop.
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False, compare=False)

    @property
    def idempotency_key(self) -> str:
        """The same for every attempt of one call and different for every other call: pass it
        to a service that deduplicates requests so a retried call takes effect once."""
        return f"{self.turn_id}/{self.call_id}"

    def heartbeat(self, *details: Any) -> None:
        """Report progress of a long call (the worker already beats on a timer, so a call is
        never lost for want of this): `details` show in the Web UI's pending activity, and a
        retried call reads the last ones back from `activity.info().heartbeat_details`. A no-op
        outside an activity and in a local one."""
        if not activity.in_activity() or activity.info().is_local:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a sync tool, in its thread
            if self.loop is not None:
                context = contextvars.copy_context()
                self.loop.call_soon_threadsafe(context.run, activity.heartbeat, *details)
            return
        activity.heartbeat(*details)


class ToolError(Exception):
    """A failure whose message is written for the model, e.g. "'../x' leads outside the workspace".

    The tool activity turns it into an `is_error` tool result; it is never retried.
    """


@dataclass(frozen=True)
class WorkerTool:
    """A function the worker runs on the model's behalf, with the schema of its arguments.

    Attributes:
        requires_approval: every call waits for a human `approve` signal, whatever the request says.
        idempotent: running a call twice has the effect of running it once, so Temporal may retry
            it after a worker crash.
        timeout_s: a run that takes longer becomes an `is_error` result for the model.
        priority: when one response asks for tools of several priorities, only the calls of the
            highest run in that iteration; the model is told to ask again for the others.
        local: the fast path for cheap tools: calls run as local activities, in the worker that
            runs the turn's workflow task, with no round trip through the server and one history
            event instead of three. Only for idempotent tools that need no approval and finish
            within `LOCAL_TOOL_MAX_TIMEOUT_S` (a local call holds the turn's workflow task open,
            and a worker lost mid-call means the call runs again on the next worker).
        context_parameter: the parameter that receives the `ToolContext`, if the function has one.
        previews_write: the workspace's own `write_file` only: the approver reads the diff a
            call would make (the `write_preview` activity) beside it.
        sandboxed: the built-in `run_python` and `run_shell` only: the turn runs their calls
            as `sandbox_call` (activities/sandbox/), never through `tool_call`.
    """

    name: str
    description: str
    input_model: type[BaseModel]
    function: Callable[..., Any]
    requires_approval: bool = False
    idempotent: bool = True
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    priority: int = 0
    local: bool = False
    context_parameter: str | None = None
    previews_write: bool = False
    sandboxed: bool = False

    def __post_init__(self) -> None:
        if self.local and (
            not self.idempotent
            or self.requires_approval
            or self.timeout_s > LOCAL_TOOL_MAX_TIMEOUT_S
        ):
            raise ValueError(
                f"tool {self.name!r} cannot be local: local tools must be idempotent, need no "
                f"approval and time out within {LOCAL_TOOL_MAX_TIMEOUT_S:g} s"
            )

    def input_schema(self) -> dict[str, Any]:
        return _schema(self.input_model)

    def definition(self) -> ToolDefinition:
        # Built once per tool: every model call offers it, and pydantic's schema generation is
        # one of the costlier things a worker does per call.
        return _definition(self.name, self.description, self.input_model)


def default_timeout_s(local: bool) -> float:
    """A tool's timeout when it names none: the local limit for a local tool, which the general
    default is above (a local call holds the turn's workflow task open)."""
    return LOCAL_TOOL_MAX_TIMEOUT_S if local else DEFAULT_TOOL_TIMEOUT_S


@overload
def worker_tool(function: _Function, /) -> WorkerTool: ...


@overload
def worker_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
    timeout_s: float | None = None,
    priority: int = 0,
    local: bool = False,
) -> Callable[[_Function], WorkerTool]: ...


def worker_tool(
    function: _Function | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
    timeout_s: float | None = None,
    priority: int = 0,
    local: bool = False,
) -> WorkerTool | Callable[[_Function], WorkerTool]:
    """Turn a typed function (sync or async) into a `WorkerTool`; usable bare or with options.

    Args:
        name: the tool's name for the model; the function's name by default.
        description: what the model reads; the docstring's first paragraph by default.
        requires_approval: see `WorkerTool`.
        idempotent: see `WorkerTool`.
        timeout_s: see `WorkerTool`; by default `DEFAULT_TOOL_TIMEOUT_S`, or for a local tool
            `LOCAL_TOOL_MAX_TIMEOUT_S` (so that `@turnkeeper.tool(local=True)` works as written).
        priority: see `WorkerTool`; higher runs first.
        local: see `WorkerTool`.

    Raises:
        TypeError: a parameter cannot be described to the model (no type hint, `*args`, ...).
        ValueError: `local` on a tool that cannot run locally.
    """

    def wrap(fn: _Function) -> WorkerTool:
        tool_name = name or fn.__name__
        input_model, context_parameter = _input_model(tool_name, fn)
        return WorkerTool(
            name=tool_name,
            description=description if description is not None else _first_paragraph(fn),
            input_model=input_model,
            function=fn,
            requires_approval=requires_approval,
            idempotent=idempotent,
            timeout_s=timeout_s if timeout_s is not None else default_timeout_s(local),
            priority=priority,
            local=local,
            context_parameter=context_parameter,
        )

    return wrap(function) if function is not None else wrap


def _first_paragraph(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def _input_model(tool_name: str, fn: Callable[..., Any]) -> tuple[type[BaseModel], str | None]:
    """The model of the arguments the model fills, and the parameter taking the `ToolContext`."""
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(f"tool {tool_name!r}: parameter {parameter.name!r} must be a keyword")
        if parameter.name not in hints:
            raise TypeError(f"tool {tool_name!r}: parameter {parameter.name!r} has no type hint")
        if hints[parameter.name] is ToolContext:
            if context_parameter is not None:
                raise TypeError(f"tool {tool_name!r}: more than one ToolContext parameter")
            context_parameter = parameter.name
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hints[parameter.name], default)
    model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_parameter


@functools.cache
def _schema(input_model: type[BaseModel]) -> dict[str, Any]:
    return _without_titles(input_model.model_json_schema())


@functools.cache
def _definition(name: str, description: str, input_model: type[BaseModel]) -> ToolDefinition:
    return ToolDefinition(name=name, description=description, input_schema=_schema(input_model))


def _without_titles(schema: Any) -> Any:
    # Pydantic titles every model and field ("Path", "read_file_arguments"): noise for the model.
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: (
            {name: _without_titles(sub) for name, sub in value.items()}
            if key in _SCHEMA_MAPS and isinstance(value, dict)
            else _without_titles(value)
        )
        for key, value in schema.items()
        if key != "title"
    }


class ToolRegistry:
    """The worker tools of one worker, by name."""

    def __init__(self, tools: Iterable[WorkerTool] = ()) -> None:
        self._tools: dict[str, WorkerTool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: WorkerTool) -> None:
        """Register `tool`; a second tool of the same name is a `ValueError`, never a shadow."""
        if tool.name in self._tools:
            raise ValueError(f"a worker tool named {tool.name!r} is already registered")
        if is_mcp_tool_name(tool.name):
            raise ValueError(
                f"worker tool {tool.name!r} takes the mcp__ prefix, which names the tools of the "
                f"worker's MCP servers; rename it"
            )
        self._tools[tool.name] = tool

    def get(self, name: str) -> WorkerTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def definitions(self, names: Iterable[str]) -> list[ToolDefinition]:
        """The definitions of `names`, in that order; names this registry lacks are skipped
        (they may be external tools, which the caller describes itself)."""
        return [self._tools[name].definition() for name in names if name in self._tools]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)


async def run_tool(
    tool: WorkerTool, arguments: dict[str, Any], context: ToolContext | None = None
) -> ToolOutput:
    """Validate `arguments`, run the tool and return its result as text, or as text and
    images when it returned `turnkeeper.Image`s.

    Sync functions run in a thread so that file or CPU work never blocks the event loop.

    Args:
        context: handed to the tool's `ToolContext` parameter; required when it has one.

    Raises:
        ToolError: the arguments do not fit the tool's schema, the tool itself refused, or it
            returned binary data, which the model cannot read.
        TypeError: the tool takes a `ToolContext` and none was given.
    """
    try:
        validated = tool.input_model.model_validate(arguments)
    except ValidationError as err:
        raise ToolError(_explain(tool, err)) from None
    # dict(model) is shallow: nested models reach the function as models, not dicts.
    kwargs = dict(validated)
    if tool.context_parameter is not None:
        if context is None:
            raise TypeError(f"tool {tool.name!r} takes a ToolContext; pass one to run_tool")
        kwargs[tool.context_parameter] = context
    if inspect.iscoroutinefunction(tool.function):
        result = await tool.function(**kwargs)
    else:
        result = await asyncio.to_thread(tool.function, **kwargs)
    if isinstance(result, bytes | bytearray | memoryview):
        raise ToolError(
            f"tool {tool.name} returned {memoryview(result).nbytes} bytes of binary data, "
            "which cannot be shown to the model"
        )
    return output_of(result, as_text)


def as_text(value: Any) -> str:
    """A tool's return value as the text of its result: strings as they are, JSON for what
    pydantic can serialize (models, dataclasses, dicts, dates...), `str()` for anything else."""
    if isinstance(value, str):
        return value
    try:
        return pydantic_core.to_json(value).decode()
    except (pydantic_core.PydanticSerializationError, ValueError, RecursionError):
        pass
    if isinstance(value, dict | list | tuple):
        # A container keeps its JSON shape; only the values pydantic cannot serialize become str.
        with contextlib.suppress(pydantic_core.PydanticSerializationError, ValueError):
            return pydantic_core.to_json(value, fallback=str).decode()
    return str(value)


def _explain(tool: WorkerTool, err: ValidationError) -> str:
    problems = []
    for error in err.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            expected = ", ".join(tool.input_model.model_fields) or "none"
            problems.append(f"unexpected argument {where!r} (expected: {expected})")
            continue
        message = error["msg"]
        message = message[:1].lower() + message[1:]
        problems.append(f"argument {where!r}: {message}" if where else f"arguments: {message}")
    return f"invalid arguments for {tool.name}: " + "; ".join(problems)
