"""The test kit for agents built on turnkeeper (the `testing` extra).

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
- `MCP_DEMO_SERVER`: the path of a real MCP server (`mcp_demo_server`) to give an agent's
  `mcp_servers` as `[sys.executable, MCP_DEMO_SERVER]`.

Only what a user of the kit imports lives here; the project's own suite keeps its fake provider
servers under `tests/fakes/`. Names are imported on first use, so that `import turnkeeper.testing`
loads no worker.
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
