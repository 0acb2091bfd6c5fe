"""Served agents over A2A (docs/a2a.md): each agent file of `turnkeeper serve --agents DIR` is
an A2A agent at `/a2a/{agent_id}` (JSON-RPC, protocol 1.0 and 0.3 method names), its card at
`/a2a/{agent_id}/.well-known/agent-card.json`; a task is a turn, a context a conversation.

- `card`: the agent card; `endpoint`: `/a2a/…` behind the bearer tokens.
- `handler`: the A2A operations over the turns; `follow`: a turn as a task stream; `wire`: a
  turn's state, answer and waiting calls in A2A's words, and the decision an answer carries.
"""

from turnkeeper.http.a2a.card import A2A_PREFIX, CARD_PATH, agent_base, agent_card
from turnkeeper.http.a2a.endpoint import A2aEndpoint, add_a2a
from turnkeeper.http.a2a.handler import TurnRequestHandler

__all__ = [
    "A2A_PREFIX",
    "CARD_PATH",
    "A2aEndpoint",
    "TurnRequestHandler",
    "add_a2a",
    "agent_base",
    "agent_card",
]
