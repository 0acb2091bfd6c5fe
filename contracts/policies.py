"""Cedar policies for tool calls: the agent's switch (`agent.policy`), what crosses the
`check_policy` activity, and the decision a turn records for each call it checked.

The policy files themselves live on the worker (`TURNKEEPER_POLICY_FILE`, read and reloaded in
`activities/policies/`); the workflow only sees a decision, recorded in history, so that a replay
reads the decision the turn acted on whatever the files say now."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

POLICY_FILE_ENV: Final = "TURNKEEPER_POLICY_FILE"

PolicyMode = Literal["enforce", "log_only"]
# What a decision does to the call: runs, waits for a person's approval first, or never runs.
PolicyEffect = Literal["permit", "ask", "forbid"]


class PolicySpec(ContractModel):
    """`agent.policy`: check every tool call of the agent against the worker's Cedar policies."""

    model_config = ConfigDict(extra="forbid")
    mode: PolicyMode = "enforce"
    """`enforce`: a `forbid` keeps the call from running and an `@effect("ask")` permit makes it
    wait for approval; `log_only`: every decision is recorded and reported, none is applied."""


class PolicyDecision(ContractModel):
    """One tool call's policy decision, as the report, the status query and the event stream
    show it."""

    call_id: str
    """The tool call's id."""
    tool: str
    """The tool it calls."""
    effect: PolicyEffect
    """What the policies decided: `permit`, `ask` or `forbid`."""
    policies: list[str] = Field(default_factory=list)
    """The deciding policies' `@id`s; empty for a `forbid` that no policy permits."""
    enforced: bool
    """Whether the turn applied it (`agent.policy.mode` `enforce`); False in `log_only`."""
    policy_hash: str = ""
    """The SHA-256 of the worker's policy set that decided."""
