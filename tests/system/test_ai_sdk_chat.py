"""The AI SDK's chat against `turnkeeper serve --agents DIR` (docs/ai-sdk.md): the `ai` package's
own chat and transport, run by Node, sends messages to a served agent beside `python worker.py`;
the chat id is the caller's conversation, each message a turn streamed as one assistant message
with its cost and tokens."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.ai_sdk_chat import chat_body, chat_client, post_chat, text_of, user_message
from tests.system.conftest import SystemStack
from tests.system.mcp_serving import serving_agents, write_agent


async def test_the_sdk_chat_streams_each_message_s_turn_of_one_conversation(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    write_agent(folder, key, "helper")
    stack.fake.script(key, [fake.text("Hello, Ada."), fake.text("You are Ada.")])
    ada, chat = f"ada-{key}", f"chat-{key}"
    async with serving_agents(stack, folder, (ada,)) as served:
        steps = await chat_client(
            served, ada, "helper", chat, [{"send": "I am Ada."}, {"send": "Who am I?"}]
        )
        # The wire as the transport reads it: its header, SSE `data:` lines, `[DONE]` last.
        status, headers, data = await post_chat(
            served, ada, "helper", chat_body(chat, user_message("Still there?"))
        )

    first, second = steps
    assert first["status"] == "ready" and first["error"] is None, first
    _, answer = first["messages"]
    assert answer["role"] == "assistant" and text_of(answer) == "Hello, Ada."
    assert answer["id"] == f"conversation:helper:{chat}/turn-1"
    metadata = answer["metadata"]
    assert metadata["turn_id"] == answer["id"] and metadata["outcome"] == "completed"
    assert metadata["cost_usd"] > 0 and metadata["output_tokens"] > 0
    assert [part["type"] for part in answer["parts"]] == ["step-start", "text"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant"] * 2
    assert text_of(second["messages"][-1]) == "You are Ada."
    assert second["messages"][-1]["id"].endswith("/turn-2")
    # The second turn read the conversation: the first exchange was in its request.
    [_, asked] = stack.fake.requests_for(key)[:2]
    assert "I am Ada." in str(asked) and "Hello, Ada." in str(asked)
    assert status == 200 and headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert headers["content-type"].startswith("text/event-stream")
    assert data[0]["type"] == "start" and data[-1] == "[DONE]"
