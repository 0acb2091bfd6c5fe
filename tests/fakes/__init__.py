"""The suite's own stand-ins for the world a worker talks to, used by every tier and by `bench/`:
local HTTP servers for the Anthropic Messages API (`fake_anthropic`) and the OpenAI Chat
Completions API (`fake_openai`), scripted per turn, that answer, bill and refuse as the real APIs
document and check every request the runtime sends; and, from the kit, the real MCP server to
start as a subprocess (`MCP_DEMO_SERVER`, `turnkeeper/testing/mcp_demo_server.py`).

Not part of the test kit an agent's author installs (`turnkeeper.testing`): its `ScriptedModel`
answers in-process and needs no server. Kept out of the wheel so that it ships only what a user
imports.
"""

from __future__ import annotations

from turnkeeper.testing import MCP_DEMO_SERVER

__all__ = ["MCP_DEMO_SERVER"]
