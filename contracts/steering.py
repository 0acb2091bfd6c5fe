"""Steering a running turn: the `steer` update adds a user message before the turn's next model
call, the `interrupt` update stops the turn at its next safe point with outcome `interrupted`.

On a turn whose `agent.approvers` have public keys both must be signed, each under its own
signing kind (`steer`, `interrupt`; never `decision`), over the turn's workflow id and agent id
and every field of the payload, so that neither can pass for a decision, for the other, or be
replayed onto another turn. A turn applies one signed steer once (it keeps the digests of those
it applied): sending the same message again takes a new signature.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Self

from pydantic import ConfigDict, Field, JsonValue, field_validator
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import SIGNING_VERSION, Signature, sign

if TYPE_CHECKING:  # cryptography is imported once, by decision_signing (see there why)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# Signing kinds (contracts/decision_signing.py): distinct from `decision` and `budget-extension`.
STEER: Final = "steer"
INTERRUPT: Final = "interrupt"
# Long enough for any instruction a person types; a steer is a message, not a document.
MAX_STEER_CHARS: Final = 20_000
MAX_REASON_CHARS: Final = 2_000

InterventionKind = Literal["steer", "interrupt"]


class _Intervention(ContractModel):
    """What `steer` and `interrupt` share: who sends it, and a signature where keys are set."""

    model_config = ConfigDict(extra="forbid")
    author: str = Field(default="", max_length=200)
    """Who sends it; must be one of `agent.approvers` when that is set."""
    signature: Signature | None = None
    """Required when the agent's approvers have public keys (`turnkeeper steer|interrupt
    --key`)."""

    # The signing kind of the subclass's payload.
    _kind: ClassVar[str]

    def _fields(self, workflow_id: str, agent_id: str) -> dict[str, JsonValue]:
        return {"workflow_id": workflow_id, "agent_id": agent_id, "author": self.author}

    def signed_fields(self, workflow_id: str, agent_id: str) -> dict[str, JsonValue]:
        """What the author's signature covers, for the turn `workflow_id` of agent `agent_id`."""
        raise NotImplementedError

    def signed_with(
        self,
        private_key: Ed25519PrivateKey,
        workflow_id: str,
        agent_id: str,
        expires: datetime,
        version: int = SIGNING_VERSION,
    ) -> Self:
        """This payload for the turn `workflow_id`, signed in format `version` (the turn's
        `signing_version`) until `expires`, under its own signing kind."""
        fields = self.signed_fields(workflow_id, agent_id)
        signature = sign(private_key, self._kind, fields, expires, version)
        return self.model_copy(update={"signature": signature})


class SteerInput(_Intervention):
    """The payload of the `steer` update."""

    _kind: ClassVar[str] = STEER

    message: str = Field(max_length=MAX_STEER_CHARS)
    """The text that joins the conversation as a user message before the next model call."""

    @field_validator("message")
    @classmethod
    def _says_something(cls, message: str) -> str:
        if not message.strip():
            raise ValueError("a steer needs a message that is not empty")
        return message

    def signed_fields(self, workflow_id: str, agent_id: str) -> dict[str, JsonValue]:
        """What the author's signature covers, for the turn `workflow_id` of agent `agent_id`."""
        return {**self._fields(workflow_id, agent_id), "message": self.message}


class InterruptInput(_Intervention):
    """The payload of the `interrupt` update."""

    _kind: ClassVar[str] = INTERRUPT

    reason: str = Field(default="", max_length=MAX_REASON_CHARS)
    """Why; the report and the event stream keep it."""

    def signed_fields(self, workflow_id: str, agent_id: str) -> dict[str, JsonValue]:
        """What the author's signature covers, for the turn `workflow_id` of agent `agent_id`."""
        return {**self._fields(workflow_id, agent_id), "reason": self.reason}


class SteerResult(ContractModel):
    """The `steer` update's answer."""

    accepted: bool = True
    """The message is queued; it joins the conversation before the next model call."""
    iteration: int
    """The iteration whose model call will read the message."""


class InterruptResult(ContractModel):
    """The `interrupt` update's answer."""

    accepted: bool = True
    """The turn stops at its next safe point and completes with outcome `interrupted`."""
    iteration: int
    """The iteration the turn was in when the interrupt arrived."""


class Intervention(ContractModel):
    """One steer or interrupt as applied: the audit trail in the report (`interventions`) and
    the status query."""

    kind: InterventionKind
    """`steer` or `interrupt`."""
    author: str = ""
    """Who sent it."""
    text: str = ""
    """A steer's message, or an interrupt's reason."""
    iteration: int
    """A steer: the iteration whose model call read it; an interrupt: the iteration it
    arrived in."""
    signed: bool = False
    """Its signature was verified."""
    at: datetime
    """When it was accepted."""
