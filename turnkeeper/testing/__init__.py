"""Fake provider servers for tests and benchmarks: local HTTP stand-ins for the Anthropic Messages
API (`fake_anthropic`) and the OpenAI Chat Completions API (`fake_openai`), scripted per turn, that
answer, bill and refuse as the real APIs document and check every request the runtime sends; and
a real MCP server to start as a subprocess (`MCP_DEMO_SERVER`).

Both the test suite and `bench/` import them from here (neither imports the other); nothing here
imports pytest, the tests or the bench. `turn_outcomes` holds what a test asserts a turn ended in.
"""

from pathlib import Path

# A script, started as `[sys.executable, MCP_DEMO_SERVER]` (stdio) or with `--http PORT`; by path,
# so that neither the caller nor the server's process imports more than the `mcp` SDK for it.
MCP_DEMO_SERVER = Path(__file__).with_name("mcp_demo_server.py")
