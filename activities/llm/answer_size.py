"""The size check of a model call's result: an answer Temporal would refuse fails the turn at
once instead of being retried (and billed) again and again."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.activity_io import ModelCallResult
from turnkeeper.contracts.errors import LLM_PAYLOAD_REJECTED

# Temporal's default limit on one payload is 2 MiB; keep a margin for the envelope.
PAYLOAD_LIMIT_BYTES = 2_000_000


def check_payload_size(result: ModelCallResult) -> None:
    """Raises ApplicationError (LLMPayloadRejected, not retried) when `result` serializes to
    more than Temporal's payload limit."""
    # A full serialization only when the answer could come near the limit: JSON escaping at
    # most sextuples a character, so text under a sixth of the limit is always safe.
    rough = sum(
        len(getattr(block, "text", "")) + len(str(getattr(block, "input", "")))
        for block in result.message.content
    )
    if rough * 6 < PAYLOAD_LIMIT_BYTES:
        return
    size = len(result.model_dump_json())
    if size > PAYLOAD_LIMIT_BYTES:
        # Temporal would reject the completion and the call would be retried (and billed) again.
        raise ApplicationError(
            f"the model's answer is {size} bytes, over Temporal's {PAYLOAD_LIMIT_BYTES}-byte "
            f"payload limit; lower agent.max_tokens or ask for a shorter answer",
            type=LLM_PAYLOAD_REJECTED,
            non_retryable=True,
        )
