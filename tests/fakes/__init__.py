"""The suite's own stand-ins for the world a worker talks to, used by every tier and by `bench/`:
local HTTP servers for the Anthropic Messages API (`fake_anthropic`) and the OpenAI Chat
Completions API (`fake_openai`), scripted per turn, that answer, bill and refuse as the real APIs
document and check every request the runtime sends; and a real MCP server to start as a
subprocess (`MCP_DEMO_SERVER`).

Not part of the test kit an agent's author installs (`turnkeeper.testing`): its `ScriptedModel`
answers in-process and needs no server. Kept out of the wheel so that it ships only what a user
imports.
"""

from __future__ import annotations

from pathlib import Path

# A script, started as `[sys.executable, MCP_DEMO_SERVER]` (stdio) or with `--http PORT`; by path,
# so that neither the caller nor the server's process imports more than the `mcp` SDK for it.
MCP_DEMO_SERVER = Path(__file__).with_name("mcp_demo_server.py")
