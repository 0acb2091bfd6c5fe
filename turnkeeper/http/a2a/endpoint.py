"""`/a2a/{agent_id}` of `turnkeeper serve --agents DIR`: each served agent as an A2A agent, its
JSON-RPC endpoint at its base and its card at `{base}/.well-known/agent-card.json`, behind the
same bearer tokens, and the same limit on failed sign-ins, as `/v1/…`.

The caller is signed in before anything of the request is read, the card included: a request
without a valid token is answered 401 (429 once its address failed too often), one for an
agent that is not served 404. The SDK's JSON-RPC dispatcher (`a2a-sdk`) then reads the request,
in the protocol's 1.0 method names and in 0.3's (`message/send`, `message/stream`, `tasks/get`,
`tasks/cancel`), and hands it to the agent's `TurnRequestHandler` with the identity in the call
context.
"""

from __future__ import annotations

from typing import Final

from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from turnkeeper.http.a2a.card import A2A_PREFIX, CARD_PATH, agent_card
from turnkeeper.http.a2a.handler import (
    IDENTITY_STATE,
    Conversations,
    ConversationsOf,
    TurnRequestHandler,
)
from turnkeeper.http.auth import FailedSignIns, sign_in
from turnkeeper.http.errors import ApiError, refusal
from turnkeeper.http.mcp.agents import ServedAgent
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import Turns, TurnService

# What of the request's headers the handlers may read: never the token.
_HIDDEN_HEADERS: Final = frozenset({"authorization", "cookie"})


class _IdentityContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the signed-in identity and without the token."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers", {})
        context.state["headers"] = {
            name: value for name, value in headers.items() if name not in _HIDDEN_HEADERS
        }
        context.state[IDENTITY_STATE] = request.scope["state"][IDENTITY_STATE]
        return context


class A2aEndpoint:
    """The ASGI app of every path under `/a2a/`."""

    def __init__(
        self,
        agents: dict[str, ServedAgent],
        turns: TurnService,
        conversations: Conversations,
        tokens: TokenStore,
        failures: FailedSignIns,
    ) -> None:
        self.agents = agents
        self.tokens = tokens
        self.failures = failures
        context = _IdentityContext()
        self.dispatchers = {
            name: JsonRpcDispatcher(
                TurnRequestHandler(agent, turns, conversations),
                context_builder=context,
                enable_v0_3_compat=True,
            )
            for name, agent in agents.items()
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        address = client[0] if client else "unknown"
        authorization = Headers(scope=scope).get("authorization")
        try:
            identity = sign_in(self.tokens, self.failures, authorization, address)
            agent_id, rest = _route(scope["path"])
            if agent_id not in self.agents:
                raise ApiError(404, f"no agent {agent_id!r} is served here")
        except ApiError as error:
            await refusal(error)(scope, receive, send)
            return
        scope.setdefault("state", {})[IDENTITY_STATE] = identity
        request = Request(scope, receive)
        if rest == CARD_PATH and scope["method"] == "GET":
            server = str(request.base_url).rstrip("/")
            await JSONResponse(agent_card(self.agents[agent_id], server))(scope, receive, send)
        elif rest in ("", "/") and scope["method"] == "POST":
            response = await self.dispatchers[agent_id].handle_requests(request)
            await response(scope, receive, send)
        else:
            error = ApiError(404, f"no {scope['method']} {scope['path']}: POST the agent's base")
            await refusal(error)(scope, receive, send)


def _route(path: str) -> tuple[str, str]:
    """The agent id of a path under `/a2a/` and what follows it."""
    agent_id, _, rest = path.removeprefix(A2A_PREFIX + "/").partition("/")
    return agent_id, f"/{rest}" if rest else ""


def add_a2a(
    app: FastAPI,
    turns: Turns,
    tokens: TokenStore,
    failures: FailedSignIns,
    conversations: ConversationsOf,
) -> None:
    """Mounts the A2A agents of `conversations`' agents under `/a2a/` of `app`."""
    if not isinstance(turns, TurnService):
        return  # an app over a fake of the turn operations (a test's) serves no A2A
    endpoint = A2aEndpoint(conversations.agents, turns, conversations, tokens, failures)
    app.mount(A2A_PREFIX, endpoint)
