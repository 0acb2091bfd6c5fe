"""`agent.a2a_agents`: the remote A2A agents of the worker's configuration that an agent may call,
each offered to the model as a tool of its name (contracts/a2a.py has the rest)."""

from __future__ import annotations

from typing import Final

from pydantic import ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

# A tool name the model API accepts (contracts/turn.py TOOL_NAME_PATTERN), which is also the key
# of the agent in the worker's configuration.
A2A_AGENT_NAME_PATTERN: Final = r"^[a-zA-Z0-9_-]{1,64}$"


class A2aAgentRef(ContractModel):
    """One of `agent.a2a_agents`: a remote A2A agent of the worker's configuration that the
    model may call as a tool of the same name."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=A2A_AGENT_NAME_PATTERN)
    """The agent's key in the worker's `TURNKEEPER_A2A_CONFIG`, and the tool name the model
    calls it by; unique among the agent's tools, external tools and sub-agents."""
    description: str = ""
    """What the model reads about the tool; empty: taken from the remote agent's card."""


def refs_from(entries: list[str | A2aAgentRef | dict[str, object]]) -> list[A2aAgentRef]:
    """`agent.a2a_agents` with plain names in their long form; a name twice is refused."""
    refs = [
        A2aAgentRef(name=e) if isinstance(e, str) else A2aAgentRef.model_validate(e)
        for e in entries
    ]
    names = [ref.name for ref in refs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"names the A2A agent {repeated[0]!r} twice")
    return refs
