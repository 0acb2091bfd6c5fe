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


def long_form(entries: object) -> object:
    """`agent.a2a_agents` as given, with each plain name as `{"name": name}`."""
    if not isinstance(entries, list):
        return entries
    return [{"name": entry} if isinstance(entry, str) else entry for entry in entries]


def repeated_name(refs: list[A2aAgentRef]) -> str | None:
    """A name that `refs` hold twice, if any."""
    names = [ref.name for ref in refs]
    return next((name for name in names if names.count(name) > 1), None)
