"""The worker's connections to its remote A2A agents: one HTTP client per agent (its headers and
rotating token), and each agent's card with the `a2a-sdk` client built from it, kept for a short
while so that the turns starting together read a card once.

The SDK's client speaks whichever protocol version and binding the card offers (JSON-RPC by
default) and is configured to poll: a `message/send` (`SendMessage`) asks the agent to answer at
once with its task (`return_immediately`, the blocking: false of A2A 0.3), which the turn then
follows with `tasks/get`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import AgentCard
from turnkeeper.activities.a2a.config import A2aAgentConfig, A2aConfig
from turnkeeper.activities.a2a.failures import ElsewhereCard
from turnkeeper.activities.credentials import RotatingCredential
from turnkeeper.activities.mcp.bearer_auth import RotatingBearerAuth

CARD_TTL_S = 300.0


class RotatingBearerHttpxAuth(httpx.Auth):
    """`RotatingBearerAuth` for `httpx`, which the A2A SDK uses (the MCP SDK uses `httpx2`, whose
    `Auth` class is another): the same flow, borrowed, not copied."""

    requires_request_body = True

    def __init__(self, credential: RotatingCredential) -> None:
        self._credential = credential

    # Plain functions of the MCP flow: they only read and set headers, which both libraries'
    # requests have alike.
    async_auth_flow = RotatingBearerAuth.async_auth_flow  # type: ignore[assignment]
    _renewed = RotatingBearerAuth._renewed


@dataclass
class _Known:
    card: AgentCard
    client: Client
    until: float


class RemoteAgents:
    """The configured agents' cards and SDK clients.

    Args:
        config: the agents, from `load_a2a_config`.
        environ: where `${NAME}` references of the config are read when a client is made.
    """

    def __init__(self, config: A2aConfig, environ: Mapping[str, str] | None = None) -> None:
        self.agents = config.agents
        self._environ = os.environ if environ is None else environ
        self._http: dict[str, httpx.AsyncClient] = {}
        self._known: dict[str, _Known] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def config(self, name: str) -> A2aAgentConfig | None:
        return self.agents.get(name)

    async def card(self, name: str) -> AgentCard:
        """The agent's card, read again once it is older than `CARD_TTL_S`.

        Raises:
            KeyError: no such agent. The SDK's `AgentCardResolutionError` (unreachable, not a
                card) and `ValueError` (a card that offers no binding the SDK speaks).
        """
        return (await self._fresh(name)).card

    async def client(self, name: str) -> Client:
        """The SDK client for the agent, built from its card (raises as `card`)."""
        return (await self._fresh(name)).client

    def forget(self, name: str) -> None:
        """Read the card again next time (the agent moved, or answered as if it had)."""
        self._known.pop(name, None)

    async def aclose(self) -> None:
        for http in self._http.values():
            await http.aclose()
        self._http.clear()

    async def _fresh(self, name: str) -> _Known:
        known = self._known.get(name)
        if known is not None and known.until > time.monotonic():
            return known
        async with self._locks.setdefault(name, asyncio.Lock()):
            known = self._known.get(name)
            if known is not None and known.until > time.monotonic():
                return known
            agent = self.agents[name]
            http = self._http_client(agent)
            base, card_path = agent.card_location()
            card = await A2ACardResolver(http, base).get_agent_card(relative_card_path=card_path)
            _same_origin(agent, card)
            factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False, polling=True))
            known = _Known(card, factory.create(card), time.monotonic() + CARD_TTL_S)
            self._known[name] = known
            return known

    def _http_client(self, agent: A2aAgentConfig) -> httpx.AsyncClient:
        http = self._http.get(agent.name)
        if http is None:
            auth = None
            if agent.bearer is not None:
                credential = RotatingCredential(agent.bearer, f"agents.{agent.name}.bearer")
                auth = RotatingBearerHttpxAuth(credential)
            http = httpx.AsyncClient(
                headers=agent.resolved_headers(self._environ),
                auth=auth,
                timeout=httpx.Timeout(agent.request_timeout_s),
            )
            self._http[agent.name] = http
        return http


def _same_origin(agent: A2aAgentConfig, card: AgentCard) -> None:
    """Refuses a card that sends the client to another origin than the configured URL: the
    worker's credential for this agent goes with every request, and a card that a third party
    changed must not carry it elsewhere.

    Raises:
        ElsewhereCard: an interface's URL has another scheme, host or port.
    """
    configured = _origin(agent.url)
    for interface in card.supported_interfaces:
        if _origin(interface.url) != configured:
            raise ElsewhereCard(
                f"its card sends requests to {interface.url!r}, not to {configured}, where "
                "the worker's configuration says the agent is; give that URL in the config"
            )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or default}"
