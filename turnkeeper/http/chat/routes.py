"""`POST /v1/agents/{agent_id}/chat` and its reconnect, `GET
/v1/agents/{agent_id}/chat/{chat_id}/stream`: the endpoints of the AI SDK's default chat
transport (docs/ai-sdk.md). The chat id is the caller's conversation with the agent; each user
message is its next turn, streamed as one assistant message whose id is the turn's workflow id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, FastAPI, Path, Request
from fastapi.responses import Response, StreamingResponse

from turnkeeper.http.chat.approvals import apply_answers
from turnkeeper.http.chat.chunks import Chunk
from turnkeeper.http.chat.request import ChatBody, UserText, asked, told_approvals
from turnkeeper.http.chat.stream import STREAM_HEADERS, sse, turn_chunks
from turnkeeper.http.conversations import Conversations
from turnkeeper.http.tokens import Identity
from turnkeeper.http.turns import TurnService


def _caller(request: Request) -> Identity:
    identity: Identity = request.state.identity  # set by the app's sign-in middleware
    return identity


Caller = Annotated[Identity, Depends(_caller)]
ChatId = Annotated[str, Path(min_length=1, max_length=200)]


def add_chat(app: FastAPI, conversations: Conversations) -> None:
    """Adds the chat endpoints of the served agents to `app`."""
    # The turn operations over the conversations' client: the stream reads what only a Temporal
    # client can (a turn's transcript, its report), which the app's `Turns` does not offer.
    turns = TurnService(conversations.client)

    @app.post("/v1/agents/{agent_id}/chat", response_class=StreamingResponse)
    async def chat(agent_id: str, body: ChatBody, identity: Caller, http: Request) -> Response:
        """A message of the AI SDK's chat transport: a user message starts the conversation's
        next turn, an assistant message with answered tool approvals decides them; either way
        the answer is the turn's UI message stream."""
        wanted = asked(body)
        if isinstance(wanted, UserText):
            workflow_id = await conversations.send(identity, agent_id, body.id, wanted.text)
            http.state.turn = workflow_id
            chunks = turn_chunks(turns, workflow_id)
        else:
            decided = await apply_answers(turns, conversations, identity, agent_id, body.id, wanted)
            http.state.turn = decided.workflow_id
            told = told_approvals(body.messages[-1])
            chunks = turn_chunks(
                turns,
                decided.workflow_id,
                decided.after,
                told,
                decided.decided,
                decided.sub_agent_runs,
            )
        return _streamed(chunks)

    @app.get("/v1/agents/{agent_id}/chat/{chat_id}/stream", response_class=StreamingResponse)
    async def reconnect(agent_id: str, chat_id: ChatId, identity: Caller) -> Response:
        """The stream of the conversation's turn in flight, replayed from its start (the SDK's
        reconnect); 204 when no turn runs."""
        workflow_id = await conversations.running_turn(identity, agent_id, chat_id)
        if workflow_id is None:
            return Response(status_code=204)
        return _streamed(turn_chunks(turns, workflow_id))


def _streamed(chunks: AsyncIterator[Chunk | None]) -> StreamingResponse:
    return StreamingResponse(sse(chunks), media_type="text/event-stream", headers=STREAM_HEADERS)
