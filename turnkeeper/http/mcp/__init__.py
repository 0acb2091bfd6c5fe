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

from turnkeeper.http.mcp.agents import AgentFileError, ServedAgent, load_agents
from turnkeeper.http.mcp.endpoint import MCP_PATH, McpEndpoint, with_mcp
from turnkeeper.http.mcp.server import agents_server, served
from turnkeeper.http.mcp.serving import ServedCall, Serving

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
