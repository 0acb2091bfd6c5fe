"""The agent card of a served agent: what `GET /a2a/{agent_id}/.well-known/agent-card.json`
answers, built from the agent file (its id, description and tools) and the address the caller
reached the server at, so that a server behind a proxy names the address its callers use."""

from __future__ import annotations

from typing import Any, Final

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from turnkeeper.http.mcp.agents import ServedAgent

# The base of each agent's paths: its JSON-RPC endpoint, and its card under `.well-known/`.
A2A_PREFIX: Final = "/a2a"
CARD_PATH: Final = "/.well-known/agent-card.json"
# The name of the security scheme the card declares: the bearer tokens of `turnkeeper tokens`.
BEARER_SCHEME: Final = "bearer"
CARD_VERSION: Final = "1"


def agent_base(agent_id: str) -> str:
    """The path of the agent's JSON-RPC endpoint (its card is under it)."""
    return f"{A2A_PREFIX}/{agent_id}"


def agent_card(agent: ServedAgent, server_url: str) -> dict[str, Any]:
    """The card of `agent` as JSON, for a server reached at `server_url` (no trailing /)."""
    spec = agent.request_template.agent
    skill = AgentSkill(
        id=agent.name,
        name=agent.name,
        description=agent.description,
        tags=["turnkeeper", *spec.tools],
        input_modes=["text/plain", "application/json"],
        output_modes=["text/plain"],
    )
    card = AgentCard(
        name=agent.name,
        description=agent.description,
        version=CARD_VERSION,
        supported_interfaces=[
            AgentInterface(
                url=f"{server_url}{agent_base(agent.name)}",
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        # Streaming from the turn's own event stream; no push: a client follows a turn by
        # `GetTask` or `SubscribeToTask`, which any replica answers from Temporal.
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            BEARER_SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="A token of `turnkeeper tokens add`; the caller is its identity.",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER_SCHEME: StringList()})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[skill],
    )
    return agent_card_to_dict(card)
