"""Checks of a `TurnRequest` that span several fields, and the tool set it offers the model.
Pure functions of the request, so they are deterministic workflow code; here with the contracts
so that the client refuses a request before starting a turn with the very checks the turn makes,
without importing workflow code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from turnkeeper.contracts.mcp import is_mcp_tool_name
from turnkeeper.contracts.names import KNOWN_PROVIDERS
from turnkeeper.contracts.pricing import price_for
from turnkeeper.contracts.subagent_checks import subagent_problem
from turnkeeper.contracts.tool_validation import schema_problem
from turnkeeper.contracts.turn import TurnRequest, split_model

# A cost budget on a named endpoint's unpriced model: refused at the start before this, left to
# the worker (which knows whether the endpoint reports its cost) since. Workflow callers ask
# `workflow.patched(ENDPOINT_PRICES_PATCH)` only when such a model is met.
ENDPOINT_PRICES_PATCH: Final = "endpoint-reported-cost"


def _always() -> bool:
    return True


def offered_tools(request: TurnRequest) -> list[str]:
    """The tools the model may see: (agent tools + external tools + sub-agents + remote A2A
    agents) ∩ allowed_tools."""
    allowed = request.task.constraints.allowed_tools
    names = [*request.agent.tools, *(tool.name for tool in request.external_tools)]
    names += [spec.name for spec in request.agent.subagents]
    names += [ref.name for ref in request.agent.a2a_agents]
    return [name for name in names if allowed is None or name in allowed]


def request_problem(
    request: TurnRequest, *, endpoints_may_price: Callable[[], bool] = _always
) -> str | None:
    """One sentence naming the first field that cannot work, or None.

    Args:
        request: the turn's request.
        endpoints_may_price: asked only for a cost budget on an unpriced model of a named
            endpoint: whether to leave it to the worker (which knows whether the endpoint
            reports what it bills) instead of refusing it here.
    """
    return (
        _duplicate_agent_tools(request)
        or _tool_name_clash(request)
        or _a2a_name_clash(request)
        or _allowed_tools_unknown(request)
        or _history_shape(request)
        or _unpriced_model(request, endpoints_may_price)
        or _invalid_output_schema(request)
        or subagent_problem(request)
    )


def _duplicate_agent_tools(request: TurnRequest) -> str | None:
    tools = request.agent.tools
    repeated = sorted({name for name in tools if tools.count(name) > 1})
    if repeated:
        return f"agent.tools: lists {', '.join(map(repr, repeated))} more than once"
    return None


def _tool_name_clash(request: TurnRequest) -> str | None:
    for tool in request.external_tools:
        if is_mcp_tool_name(tool.name):
            return (
                f"external_tools: tool {tool.name!r} is named like an MCP tool "
                f"(mcp__<server>__<tool>, which the worker's MCP servers provide); rename it"
            )
        if tool.name in request.agent.tools:
            return (
                f"external_tools: tool {tool.name!r} is defined twice, as a worker tool "
                f"(agent.tools) and as an external tool (external_tools); rename one"
            )
    return None


def _a2a_name_clash(request: TurnRequest) -> str | None:
    taken = {name: "agent.tools" for name in request.agent.tools}
    taken |= {tool.name: "external_tools" for tool in request.external_tools}
    taken |= {spec.name: "agent.subagents" for spec in request.agent.subagents}
    for ref in request.agent.a2a_agents:
        if ref.name in taken:
            return (
                f"agent.a2a_agents: {ref.name!r} is also a tool name in {taken[ref.name]}; "
                "each tool the model is offered needs a name of its own"
            )
    return None


def _allowed_tools_unknown(request: TurnRequest) -> str | None:
    allowed = request.task.constraints.allowed_tools
    if allowed is None or request.agent.skills:
        # With skills, a name may be a tool a skill brings, known once the worker has described
        # them: checked then (`skills.described_problem`).
        return None
    known = set(request.agent.tools) | {tool.name for tool in request.external_tools}
    known |= {spec.name for spec in request.agent.subagents}
    known |= {ref.name for ref in request.agent.a2a_agents}
    unknown = [name for name in allowed if name not in known]
    if unknown:
        return (
            f"task.constraints.allowed_tools: names {', '.join(map(repr, unknown))}, "
            f"which the agent does not have"
        )
    return None


def _history_shape(request: TurnRequest) -> str | None:
    expected = "user"
    for index, message in enumerate(request.history):
        if message.role != expected:
            return (
                f"history.{index}.role: is {message.role!r}; messages must alternate "
                f"user/assistant, starting with user"
            )
        expected = "assistant" if expected == "user" else "user"
    return None


def _unpriced_model(request: TurnRequest, endpoints_may_price: Callable[[], bool]) -> str | None:
    if request.task.constraints.cost_budget_usd is None:
        return None
    agent = request.agent
    chain = [agent.model, *agent.fallback_chain()]
    prices = [(model, price_for(model, agent.price_of(model))) for model in chain]
    for model, price in prices:
        if price is None:
            if split_model(model)[0] not in KNOWN_PROVIDERS and endpoints_may_price():
                continue
            return (
                f"task.constraints.cost_budget_usd: no price is known for {model!r}, so the "
                f"budget could not be enforced; give agent.price (a fallback entry its own "
                f"price) or drop the budget"
            )
    return None


def _invalid_output_schema(request: TurnRequest) -> str | None:
    schema = request.agent.output_schema
    problem = schema_problem(schema) if schema is not None else None
    return f"agent.output_schema: {problem}" if problem else None
