"""Checks of a request's tree of sub-agents (`agent.subagents`, recursively), made when the root
turn starts so that no part of the tree fails later for a reason visible now. Pure functions of
the request, so they are deterministic workflow code.

A tree of inline agent objects cannot point back at itself, so a cycle here is an agent that
delegates to an agent of its own `id` somewhere below it: the same agent along one chain of
ancestors, which would delegate to itself again and again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from turnkeeper.contracts.mcp import is_mcp_tool_name
from turnkeeper.contracts.pricing import unpriced_model
from turnkeeper.contracts.turn import AgentSpec, SubagentSpec, TurnRequest

# Levels of sub-agents below the root turn (a root's sub-agents are level 1).
MAX_SUBAGENT_DEPTH = 3


class Node(NamedTuple):
    """One sub-agent of the tree, with where it sits."""

    spec: SubagentSpec
    path: str  # its field path in the request, e.g. "agent.subagents.0"
    depth: int  # levels below the root turn
    ancestors: tuple[str, ...]  # agent ids from the root down to its parent


def subagent_problem(request: TurnRequest) -> str | None:
    """One sentence naming the first sub-agent field that cannot work, or None."""
    top = request.parent.depth if request.parent is not None else 0
    for node in _walk(request.agent, "agent", top, ()):
        problem = (
            _name_problem(node, request)
            or _depth_problem(node)
            or _cycle_problem(node)
            or _boundary_problem(node, request.task.constraints.allowed_tools)
            or _unpriced_problem(node, request)
        )
        if problem:
            return problem
    return None


def _walk(agent: AgentSpec, path: str, depth: int, ancestors: tuple[str, ...]) -> Iterator[Node]:
    """Every sub-agent below `agent`, parents before their children."""
    chain = (*ancestors, agent.id)
    for index, spec in enumerate(agent.subagents):
        node = Node(spec, f"{path}.subagents.{index}", depth + 1, chain)
        yield node
        yield from _walk(spec.agent, f"{node.path}.agent", depth + 1, chain)


def _siblings_and_tools(node: Node, request: TurnRequest) -> tuple[list[str], list[str]]:
    """The names beside which `node` is offered: its parent agent's sub-agent names and tools
    (and the request's external tools, at the top level)."""
    parent = _parent_agent(node, request)
    tools = list(parent.tools)
    if node.depth == _top(request) + 1:
        tools += [tool.name for tool in request.external_tools]
    return [spec.name for spec in parent.subagents], tools


def _top(request: TurnRequest) -> int:
    return request.parent.depth if request.parent is not None else 0


def _parent_agent(node: Node, request: TurnRequest) -> AgentSpec:
    agent = request.agent
    # "agent.subagents.0.agent.subagents.2" -> indices 0; the last index is the node itself.
    indices = [int(part) for part in node.path.split(".") if part.isdigit()]
    for index in indices[:-1]:
        agent = agent.subagents[index].agent
    return agent


def _name_problem(node: Node, request: TurnRequest) -> str | None:
    name = node.spec.name
    siblings, tools = _siblings_and_tools(node, request)
    if siblings.count(name) > 1:
        return f"{node.path}.name: {name!r} names two sub-agents of the same agent; rename one"
    if name in tools:
        return (
            f"{node.path}.name: {name!r} is already a tool of the agent that delegates to it; "
            f"rename the sub-agent"
        )
    if is_mcp_tool_name(name):
        return (
            f"{node.path}.name: {name!r} is named like an MCP tool (mcp__<server>__<tool>); "
            f"rename the sub-agent"
        )
    return None


def _depth_problem(node: Node) -> str | None:
    if node.depth <= MAX_SUBAGENT_DEPTH:
        return None
    return (
        f"{node.path}: sub-agents nest {node.depth} levels below the root turn, more than "
        f"the {MAX_SUBAGENT_DEPTH} allowed"
    )


def _cycle_problem(node: Node) -> str | None:
    agent_id = node.spec.agent.id
    if agent_id not in node.ancestors:
        return None
    chain = " -> ".join((*node.ancestors, agent_id))
    return (
        f"{node.path}.agent.id: agent {agent_id!r} delegates to itself ({chain}); a sub-agent "
        f"must be a different agent from every agent above it"
    )


def _boundary_problem(node: Node, allowed: list[str] | None) -> str | None:
    """A sub-agent inherits the root task's `allowed_tools`: its tools must lie inside it."""
    if allowed is None:
        return None
    outside = [tool for tool in node.spec.agent.tools if tool not in allowed]
    if not outside:
        return None
    return (
        f"{node.path}.agent.tools: {', '.join(map(repr, outside))} lie outside the task's "
        f"allowed_tools ({', '.join(allowed) or 'none'}), which bind every sub-agent too"
    )


def _unpriced_problem(node: Node, request: TurnRequest) -> str | None:
    """A sub-agent inherits the cost budget, which needs a price for each of its models."""
    own = node.spec.constraints
    if request.task.constraints.cost_budget_usd is None and (
        own is None or own.cost_budget_usd is None
    ):
        return None
    model = unpriced_model(node.spec.agent)
    if model is None:
        return None
    return (
        f"{node.path}.agent.model: no price is known for {model!r}, so the cost budget the "
        f"sub-agent inherits could not be enforced; give its agent.price"
    )
