"""Builds the `TurnRequest` of `turnkeeper run` from its flags and an optional agent file.

The request is validated here, on the caller's machine, with the same models and cross-field
checks the workflow applies, so a typo is reported before anything starts (and before a turn
fails on the worker with `InvalidTurnRequest`).

An agent file is a JSON object shaped like the contract's `agent`, optionally with a
`constraints` object that becomes the task's default constraints, and a `description` (what the
agent does, for those who call it as a tool: `turnkeeper serve --agents`). Flags override the
file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from turnkeeper.contracts.request_checks import request_problem
from turnkeeper.contracts.turn import TurnRequest

DEFAULT_AGENT_ID: Final = "assistant"

# Where each field comes from on the command line, so an error names what to change.
_FLAGS: Final[dict[str, str]] = {
    "agent.id": "--agent-id",
    "agent.model": "--model",
    "agent.fallback_models": "--fallback-model",
    "agent.fallback_cooldown_s": "--fallback-cooldown-s",
    "agent.fallback_after_attempts": "--fallback-after-attempts",
    "agent.fallback_on": "--fallback-on",
    "agent.prompt_cache": "--prompt-cache/--no-prompt-cache",
    "agent.system_prompt": "--system",
    "agent.tools": "--tool",
    "agent.max_iterations": "--max-iterations",
    "agent.max_tokens": "--max-tokens",
    "task.id": "--task-id",
    "task.input": "INPUT",
    "task.constraints.allowed_tools": "--allowed-tool",
    "task.constraints.time_budget_ms": "--time-budget-ms",
    "task.constraints.cost_budget_usd": "--cost-budget-usd",
    "task.constraints.max_tool_interactions": "--max-tool-interactions",
    "task.constraints.require_approval": "--require-approval",
    "task.constraints.approval_timeout_s": "--approval-timeout-s",
    "external_tools": "--external-tools",
    "history": "--history",
}


class RequestError(ValueError):
    """The request cannot be built; the message is one line naming the field at fault."""


@dataclass(frozen=True)
class RunOptions:
    """What `turnkeeper run` was given. None (or an empty list) means "not given"."""

    input: str | None = None
    agent_file: Path | None = None
    agent_id: str | None = None
    model: str | None = None
    fallback_models: list[str] | None = None
    fallback_cooldown_s: float | None = None
    fallback_after_attempts: int | None = None
    fallback_on: list[str] | None = None
    prompt_cache: bool | None = None
    system: str | None = None
    tools: list[str] | None = None
    max_iterations: int | None = None
    max_tokens: int | None = None
    time_budget_ms: int | None = None
    cost_budget_usd: float | None = None
    max_tool_interactions: int | None = None
    allowed_tools: list[str] | None = None
    require_approval: list[str] | None = None
    approval_timeout_s: float | None = None
    task_id: str | None = None
    external_tools_file: Path | None = None
    history_file: Path | None = None
    tenant: str | None = None


def build_request(options: RunOptions, *, short_id: str) -> TurnRequest:
    """The validated request: agent file, then flags on top, then defaults.

    Args:
        options: The command's flags.
        short_id: Random suffix shared with the workflow id; names the task when `--task-id`
            is not given.

    Raises:
        RequestError: A file cannot be read or the request does not validate.
    """
    agent, constraints = _agent_file(options.agent_file) if options.agent_file else ({}, {})
    agent.update(_agent_flags(options))
    agent.setdefault("id", DEFAULT_AGENT_ID)
    constraints.update(_constraint_flags(options))
    task: dict[str, Any] = {"id": options.task_id or f"task-{short_id}"}
    if options.input is not None:
        task["input"] = options.input
    task["constraints"] = constraints
    payload: dict[str, Any] = {"agent": agent, "task": task}
    if options.external_tools_file:
        payload["external_tools"] = _external_tools_file(options.external_tools_file)
    if options.history_file:
        payload["history"] = _history_file(options.history_file)
    if options.tenant is not None:
        payload["tenant"] = options.tenant
    return validate_request(payload)


def validate_request(payload: Any) -> TurnRequest:
    """`TurnRequest` from plain JSON, with the workflow's own cross-field checks.

    Raises:
        RequestError: Every problem found, on one line, each naming its field.
    """
    try:
        request = TurnRequest.model_validate(payload)
    except ValidationError as err:
        raise RequestError("; ".join(_describe(item) for item in err.errors())) from None
    problem = request_problem(request)
    if problem:
        raise RequestError(problem)
    return request


def _agent_flags(options: RunOptions) -> dict[str, Any]:
    return _given(
        id=options.agent_id,
        model=options.model,
        fallback_models=options.fallback_models or None,
        fallback_cooldown_s=options.fallback_cooldown_s,
        fallback_after_attempts=options.fallback_after_attempts,
        fallback_on=options.fallback_on or None,
        prompt_cache=options.prompt_cache,
        system_prompt=options.system,
        tools=options.tools or None,
        max_iterations=options.max_iterations,
        max_tokens=options.max_tokens,
    )


def _constraint_flags(options: RunOptions) -> dict[str, Any]:
    return _given(
        allowed_tools=options.allowed_tools or None,
        time_budget_ms=options.time_budget_ms,
        cost_budget_usd=options.cost_budget_usd,
        max_tool_interactions=options.max_tool_interactions,
        require_approval=options.require_approval or None,
        approval_timeout_s=options.approval_timeout_s,
    )


def _given(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def read_agent_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The agent definition of `--agent FILE` and its default constraints.

    Raises:
        RequestError: The file is missing, is not JSON, or is not an agent object.
    """
    return _agent_file(path)


@dataclass(frozen=True)
class AgentFile:
    """An agent file's parts: the agent definition, its default constraints, its description."""

    agent: dict[str, Any]
    constraints: dict[str, Any]
    description: str | None


def read_agent_definition(path: Path, flag: str = "--agent") -> AgentFile:
    """The agent file at `path` in its parts (`flag` names the option it came from in errors).

    Raises:
        RequestError: The file is missing, is not JSON, is not an agent object, or its
            `constraints` is not an object or its `description` not a string.
    """
    agent = _read_json(path, flag)
    if not isinstance(agent, dict):
        raise RequestError(
            f"{flag} {path}: expected a JSON object (the agent definition), got {_json_kind(agent)}"
        )
    constraints = agent.pop("constraints", None) or {}
    if not isinstance(constraints, dict):
        raise RequestError(
            f"{flag} {path}: 'constraints' must be a JSON object, got {_json_kind(constraints)}"
        )
    description = agent.pop("description", None)
    if description is not None and not isinstance(description, str):
        raise RequestError(
            f"{flag} {path}: 'description' must be a string, got {_json_kind(description)}"
        )
    return AgentFile(agent, constraints, description)


def _agent_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The agent definition and its default constraints."""
    parts = read_agent_definition(path)
    return parts.agent, parts.constraints


def _external_tools_file(path: Path) -> Any:
    """A list of tool specs, or a request-shaped object holding one under `external_tools`."""
    content = _read_json(path, "--external-tools")
    if isinstance(content, dict) and "external_tools" in content:
        content = content["external_tools"]
    if not isinstance(content, list):
        raise RequestError(
            f"--external-tools {path}: expected a JSON list of tools "
            f"({{name, description, input_schema}}), got {_json_kind(content)}"
        )
    return content


def _history_file(path: Path) -> Any:
    """The `messages` of an earlier report, or the report itself (`turnkeeper run --json`)."""
    content = _read_json(path, "--history")
    if isinstance(content, dict) and "messages" in content:
        content = content["messages"]
    if not isinstance(content, list):
        raise RequestError(
            f"--history {path}: expected a report JSON object or a list of messages, "
            f"got {_json_kind(content)}"
        )
    return content


def _read_json(path: Path, flag: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RequestError(f"{flag} {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise RequestError(f"{flag} {path}: cannot be read ({err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise RequestError(
            f"{flag} {path}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None


def _json_kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _describe(item: ErrorDetails) -> str:
    field = ".".join(str(part) for part in item["loc"]) or "request"
    message = item["msg"].removeprefix("Value error, ")
    if item["type"] == "missing":
        message = "required"
    # A repeatable flag's item (agent.fallback_on.0) is named by the flag of its list.
    parts = [str(part) for part in item["loc"] if not isinstance(part, int)]
    flag = _FLAGS.get(field) or _FLAGS.get(".".join(parts))
    return f"{field} ({flag}): {message}" if flag else f"{field}: {message}"
