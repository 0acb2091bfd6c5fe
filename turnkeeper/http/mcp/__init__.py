"""Agents as MCP tools (docs/mcp-serve.md): each agent file of a folder is a tool, served at
`/mcp` of `turnkeeper serve --agents DIR` (Streamable HTTP, bearer tokens) and over stdio by
`turnkeeper mcp --agents DIR --as NAME`, in both protocol eras, a call optionally as a task
whose id is the turn's workflow id.

- `agents`: the agent files, validated at start.
- `server`: the SDK's lowlevel server of them; `calls` (tools), `tasks` (tasks, both eras),
  `results`, `turn_view` and `task_wire` (a turn as a tool result and as a task).
- `serving`: what the handlers share, with the hooks where approvals reach the caller
  (`Serving.on_waiting`, `Serving.input_requests`, and `agents_server(…, update=)`).
- `endpoint`: `/mcp` behind the bearer tokens; `stdio`: `turnkeeper mcp`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnkeeper.http.mcp.agents import AgentFileError, ServedAgent, load_agents
    from turnkeeper.http.mcp.endpoint import MCP_PATH, McpEndpoint, with_mcp
    from turnkeeper.http.mcp.server import agents_server, served
    from turnkeeper.http.mcp.serving import ServedCall, Serving

# Each name is imported from its module at first use (PEP 562), not here: the MCP SDK costs
# every `turnkeeper serve` over a second of start-up, and only one with `--agents` serves `/mcp`
# (a plain server, and `conversations`, need `agents` alone).
_HOMES = {
    "AgentFileError": "agents",
    "ServedAgent": "agents",
    "load_agents": "agents",
    "MCP_PATH": "endpoint",
    "McpEndpoint": "endpoint",
    "with_mcp": "endpoint",
    "agents_server": "server",
    "served": "server",
    "ServedCall": "serving",
    "Serving": "serving",
}

__all__ = [
    "MCP_PATH",
    "AgentFileError",
    "McpEndpoint",
    "ServedAgent",
    "ServedCall",
    "Serving",
    "agents_server",
    "load_agents",
    "served",
    "with_mcp",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
