"""The AI SDK's UI message stream on `turnkeeper serve --agents` (docs/ai-sdk.md): `add_chat`
adds `POST /v1/agents/{agent_id}/chat` and its reconnect; `turn_chunks` is a turn's event
stream as UI message chunks."""

from turnkeeper.http.chat.routes import add_chat
from turnkeeper.http.chat.stream import turn_chunks

__all__ = ["add_chat", "turn_chunks"]
