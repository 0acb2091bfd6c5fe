"""The tools of a model call: the definitions the model is offered, looked up here on the worker
so that worker tool definitions never travel through history, and what the workflow must learn
of the worker's tools (their traits and which always need approval), sent once per turn."""

from __future__ import annotations

import os
import shutil

from temporalio.exceptions import ApplicationError
from turnkeeper.activities.sandbox.limits import BWRAP_ENV, INSTALL_HINT
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.contracts.activity_io import CallContext, ToolTraits
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.sandbox import SANDBOX_TOOLS
from turnkeeper.contracts.tools import ToolDefinition


def tool_definitions(
    names: list[str], context: CallContext, tools: ToolRegistry
) -> list[ToolDefinition]:
    """The definition of each offered tool, in order: an MCP tool the turn discovered, an
    external tool of the request, else a tool of this worker.

    Raises:
        ApplicationError: InvalidTurnRequest, not retried: a name is none of these.
    """
    external = {tool.name: tool for tool in context.external_tools}
    mcp = {tool.name: tool for tool in context.mcp_tools}
    definitions: list[ToolDefinition] = []
    for name in names:
        if name in mcp:
            definitions.append(mcp[name])
        elif name in external:
            spec = external[name]
            definitions.append(
                ToolDefinition(
                    name=spec.name, description=spec.description, input_schema=spec.input_schema
                )
            )
        elif (tool := tools.get(name)) is not None:
            definitions.append(tool.definition())
        elif name in SANDBOX_TOOLS and shutil.which(os.environ.get(BWRAP_ENV) or "bwrap") is None:
            raise ApplicationError(
                f"agent.tools names {name!r}, which runs in a bubblewrap sandbox, and this worker "
                f"has no bubblewrap: {INSTALL_HINT}",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            )
        else:
            known = ", ".join(tools.names()) or "none"
            raise ApplicationError(
                f"agent.tools names {name!r}, which is neither a tool of this worker "
                f"({known}) nor an external tool of the request",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            )
    return definitions


def approval_required(names: list[str], tools: ToolRegistry) -> list[str]:
    """The offered worker tools that declare they always need a human approval."""
    return [
        name for name in names if (tool := tools.get(name)) is not None and tool.requires_approval
    ]


def tool_traits(names: list[str], tools: ToolRegistry) -> list[ToolTraits]:
    """What the workflow must know of each offered worker tool to dispatch its calls safely."""
    traits = []
    for name in names:
        tool = tools.get(name)
        if tool is not None:
            traits.append(
                ToolTraits(
                    name=name,
                    input_schema=tool.input_schema(),
                    requires_approval=tool.requires_approval,
                    idempotent=tool.idempotent,
                    timeout_s=tool.timeout_s,
                    priority=getattr(tool, "priority", 0),
                    local=getattr(tool, "local", False),
                    previews_write=getattr(tool, "previews_write", False),
                    sandboxed=getattr(tool, "sandboxed", False),
                )
            )
    return traits
