"""The test kit for agents built on turnkeeper, and the fakes the project's own suite uses.

For your agent's tests (docs/testing-your-agent.md):

    from turnkeeper.testing import ScriptedModel, TurnTestEnvironment, call, reply

    model = ScriptedModel([call("lookup_order", order_id="1042"), reply("It was delivered.")])
    async with TurnTestEnvironment(tools=[lookup_order], model=model) as env:
        report = await (await env.start_turn("Where is order 1042?")).result()
    assert_tools_called(report, [call("lookup_order", order_id="1042")])

- `ScriptedModel`, `call`, `reply`, `Conversation`, `ScriptError`: a model that answers from a
  script, in-process, checking what the turn sends it (`scripted_model`, `script`).
- `TurnTestEnvironment`: a Temporal server and a worker with your tools (`environment`); the
  handles of its turns, `CheckedTurnHandle`, raise `EnvironmentStopped` when used after it closed
  (`checked_handle`).
- `tool_calls`, `assert_tools_called`, `assert_decisions`, `assert_outcome` (`assertions`).
- `pytest_plugin`: the fixtures `turnkeeper_server` and `turn_env` (entry point `pytest11`).

The fake provider servers, used by the suite and `bench/`: local HTTP stand-ins for the
Anthropic Messages API (`fake_anthropic`) and the OpenAI Chat Completions API (`fake_openai`),
scripted per turn, that answer, bill and refuse as the real APIs document and check every request
the runtime sends; and a real MCP server to start as a subprocess (`MCP_DEMO_SERVER`).
`turn_outcomes` holds what a test asserts a turn ended in. Nothing here imports the tests or the
bench. Names are imported on first use, so that importing a fake server loads no worker.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

__all__ = [
    "MCP_DEMO_SERVER",
    "CheckedTurnHandle",
    "Conversation",
    "EnvironmentStopped",
    "Reply",
    "ScriptError",
    "ScriptedModel",
    "ToolCall",
    "TurnTestEnvironment",
    "assert_decisions",
    "assert_outcome",
    "assert_tools_called",
    "call",
    "reply",
    "tool_calls",
]

# A script, started as `[sys.executable, MCP_DEMO_SERVER]` (stdio) or with `--http PORT`; by path,
# so that neither the caller nor the server's process imports more than the `mcp` SDK for it.
MCP_DEMO_SERVER = Path(__file__).with_name("mcp_demo_server.py")

_EXPORTS: dict[str, str] = {
    "Conversation": "script",
    "Reply": "script",
    "ScriptError": "script",
    "ToolCall": "script",
    "call": "script",
    "reply": "script",
    "ScriptedModel": "scripted_model",
    "CheckedTurnHandle": "checked_handle",
    "EnvironmentStopped": "checked_handle",
    "TurnTestEnvironment": "environment",
    "tool_calls": "assertions",
    "assert_tools_called": "assertions",
    "assert_decisions": "assertions",
    "assert_outcome": "assertions",
}


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'turnkeeper.testing' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"turnkeeper.testing.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from turnkeeper.testing.assertions import (
        assert_decisions,
        assert_outcome,
        assert_tools_called,
        tool_calls,
    )
    from turnkeeper.testing.checked_handle import CheckedTurnHandle, EnvironmentStopped
    from turnkeeper.testing.environment import TurnTestEnvironment
    from turnkeeper.testing.script import (
        Conversation,
        Reply,
        ScriptError,
        ToolCall,
        call,
        reply,
    )
    from turnkeeper.testing.scripted_model import ScriptedModel
