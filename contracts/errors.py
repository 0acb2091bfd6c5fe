"""Error types of the contract, as string constants so that raise sites and handling sites
cannot diverge. Every one is raised as a non-retryable `ApplicationError(type=...)`."""

from typing import Final

INVALID_TURN_REQUEST: Final = "InvalidTurnRequest"
# A session's start input does not validate (the message names the field).
INVALID_SESSION_REQUEST: Final = "InvalidSessionRequest"
# A `send` or `close` the session cannot take now (a turn runs, the budget is spent, it is closed).
SESSION_REFUSED: Final = "SessionRefused"
# A request, signal or update reached a worker that requires encryption unencrypted. Its own
# type, not InvalidTurnRequest: the sender (who lacks the keys) reads the failure's type and,
# for this type only, its message (`contracts/plaintext.py`); other messages are encrypted.
ENCRYPTION_REQUIRED: Final = "EncryptionRequired"
# An update of a running turn (`decide`, `extend_budget`, `steer`, `interrupt`, `cancel`) that its
# validator refuses: an unknown or settled call, an approver the turn does not accept, a signature
# that does not verify, a payload that does not fit. Named, not Python's `ValueError`, so that a
# client in any language can tell a refusal apart by type.
DECISION_REFUSED: Final = "DecisionRefused"
# The `messages` query of a session that just continued as new, before it read its conversation
# back; a query carries only a message, so the message starts with this name.
SESSION_CONVERSATION_LOADING: Final = "SessionConversationLoading"
# How a session records a turn that was cancelled or terminated (no error type of its own).
TURN_CANCELLED: Final = "TurnCancelled"
TURN_BUDGET_EXCEEDED: Final = "TurnBudgetExceeded"
MAX_ITERATIONS_EXCEEDED: Final = "MaxIterationsExceeded"
AUTONOMY_BOUNDARY_VIOLATION: Final = "AutonomyBoundaryViolation"
TOOL_ARGUMENTS_INVALID: Final = "ToolArgumentsInvalid"
# An output validator raised something other than OutputRejected (or never answered): a defect
# of the application's validator, so the turn fails instead of asking the model again.
OUTPUT_VALIDATOR_ERROR: Final = "OutputValidatorError"
# An enforced guardrail (`agent.guardrails`) blocked the task input (before any model call) or
# the final answer; the message names the guardrail, the stage and its reason.
GUARDRAIL_BLOCKED: Final = "GuardrailBlocked"
# A defect in turnkeeper itself; the turn fails with its partial report instead of hanging.
TURN_INTERNAL_ERROR: Final = "TurnInternalError"
LLM_AUTH_ERROR: Final = "LLMAuthError"
LLM_INVALID_REQUEST: Final = "LLMInvalidRequest"
LLM_CONTEXT_TOO_LONG: Final = "LLMContextTooLong"
LLM_CONTENT_FILTERED: Final = "LLMContentFiltered"
LLM_UNAVAILABLE: Final = "LLMUnavailable"

# Raised by the model-call activity when it is retryable (rate limit, overload, 5xx, network):
# Temporal retries it; once retries are exhausted the workflow reports LLM_UNAVAILABLE.
LLM_TRANSIENT: Final = "LLMTransient"
# The activity result or input cannot cross Temporal (too large, not serializable): retrying
# would only bill the model again.
LLM_PAYLOAD_REJECTED: Final = "LLMPayloadRejected"
# The content store lost an object the model call refers to; the workflow answers by
# re-sending the conversation inline, so nothing is lost.
CONTENT_MISSING: Final = "ContentMissing"
# A worker replaying a cassette was asked for a model call the cassette does not hold
# (TURNKEEPER_CASSETTE_MODE=replay); the message names the cassette and the first difference.
CASSETTE_MISS: Final = "CassetteMiss"
# A workflow id the runtime keeps for one of its own workflows (an agent's standing approvals, a
# tenant's or a model's ledger) is held by a running workflow of another type: one started there
# before the runtime refused such ids, or by hand. The message names the id and the type and says
# to terminate it; asking again would meet the same squatter.
RUNTIME_ID_TAKEN: Final = "RuntimeIdTaken"

LLM_REFUSALS: Final = frozenset(
    {LLM_AUTH_ERROR, LLM_INVALID_REQUEST, LLM_CONTEXT_TOO_LONG, LLM_CONTENT_FILTERED}
)
