"""Steering a running turn: the `steer` update adds a user message before the turn's next model
call, the `interrupt` update stops the turn at its next safe point with outcome `interrupted`,
the `cancel` update ends it as a Temporal cancellation does (outcome `cancelled`).

On a turn whose `agent.approvers` have public keys each must be signed, under its own signing
kind (`steer`, `interrupt`, `cancel`; never `decision`), over the turn's workflow id, first run id
(signing format 3) and agent id and every field of the payload, so that none can pass for a
decision or for another, or be replayed onto another turn, a later one under the same workflow id
included. A turn applies one signed steer once (it keeps the digests of those it applied):
sending the same message again takes a new signature.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Self

from pydantic import ConfigDict, Field, JsonValue, field_validator
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.decision_signing import SIGNING_VERSION, Signature, bind_run, sign

if TYPE_CHECKING:  # cryptography is imported once, by decision_signing (see there why)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# Signing kinds (contracts/decision_signing.py): distinct from `decision` and `budget-extension`.
STEER: Final = "steer"
INTERRUPT: Final = "interrupt"
CANCEL: Final = "cancel"
# Long enough for any instruction a person types; a steer is a message, not a document.
MAX_STEER_CHARS: Final = 20_000
MAX_REASON_CHARS: Final = 2_000

InterventionKind = Literal["steer", "interrupt", "cancel"]


class _Intervention(ContractModel):
    """What `steer`, `interrupt` and `cancel` share: who sends it, and a signature where keys
    are set."""

    model_config = ConfigDict(extra="forbid")
    author: str = Field(default="", max_length=200)
    """Who sends it; must be one of `agent.approvers` when that is set."""
    signature: Signature | None = None
    """Required when the agent's approvers have public keys (`turnkeeper steer|interrupt|cancel
    --key`)."""

    # The signing kind of the subclass's payload.
    _kind: ClassVar[str]

    def _own_fields(self) -> dict[str, JsonValue]:
        """The subclass's own fields that the signature covers."""
        raise NotImplementedError

    def signed_fields(
        self, workflow_id: str, agent_id: str, first_run_id: str | None = None
    ) -> dict[str, JsonValue]:
        """What the author's signature covers, for the turn `workflow_id` of agent `agent_id`
        whose first run is `first_run_id` (given where the turn's signing format binds it)."""
        fields: dict[str, JsonValue] = {
            "workflow_id": workflow_id,
            "agent_id": agent_id,
            "author": self.author,
        }
        return bind_run({**fields, **self._own_fields()}, first_run_id)

    def signed_with(
        self,
        private_key: Ed25519PrivateKey,
        workflow_id: str,
        agent_id: str,
        expires: datetime,
        version: int = SIGNING_VERSION,
        first_run_id: str | None = None,
    ) -> Self:
        """This payload for the turn `workflow_id` (first run `first_run_id`), signed in format
        `version` (the turn's `signing_version`) until `expires`, under its own signing kind."""
        fields = self.signed_fields(workflow_id, agent_id, first_run_id)
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

    def _own_fields(self) -> dict[str, JsonValue]:
        return {"message": self.message}


class InterruptInput(_Intervention):
    """The payload of the `interrupt` update."""

    _kind: ClassVar[str] = INTERRUPT

    reason: str = Field(default="", max_length=MAX_REASON_CHARS)
    """Why; the report and the event stream keep it."""

    def _own_fields(self) -> dict[str, JsonValue]:
        return {"reason": self.reason}


class CancelInput(_Intervention):
    """The payload of the `cancel` update: an approver's cancellation, which the turn verifies
    like an interrupt and then ends as a Temporal cancellation ends it."""

    _kind: ClassVar[str] = CANCEL

    reason: str = Field(default="", max_length=MAX_REASON_CHARS)
    """Why; the status query's `interventions` and the cancellation request keep it."""

    def _own_fields(self) -> dict[str, JsonValue]:
        return {"reason": self.reason}


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


class CancelResult(ContractModel):
    """The `cancel` update's answer."""

    accepted: bool = True
    """Temporal was asked to cancel the turn; it ends with outcome `cancelled` and its partial
    report, as a cancellation from a client ends it."""
    iteration: int
    """The iteration the turn was in when the cancel arrived."""


class CancelTurnInput(ContractModel):
    """The input of the `cancel_turn` activity: the run that an accepted `cancel` asks Temporal
    to cancel (a workflow cannot request its own cancellation)."""

    workflow_id: str
    """The turn."""
    first_run_id: str
    """The turn's first run: the request follows the turn across continue-as-new and never
    reaches a later turn started under the same workflow id."""
    reason: str = ""
    """Recorded with the cancellation request."""


class Intervention(ContractModel):
    """One steer, interrupt or cancel as applied: the audit trail in the report
    (`interventions`) and the status query."""

    kind: InterventionKind
    """`steer`, `interrupt` or `cancel`."""
    author: str = ""
    """Who sent it."""
    text: str = ""
    """A steer's message, or an interrupt's or cancel's reason."""
    iteration: int
    """A steer: the iteration whose model call read it; an interrupt or a cancel: the
    iteration it arrived in."""
    signed: bool = False
    """Its signature was verified."""
    at: datetime
    """When it was accepted."""
