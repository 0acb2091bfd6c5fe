"""An answer Temporal would refuse as a payload fails the turn at once, not after retries."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.llm.model_call_activity import PAYLOAD_LIMIT_BYTES, check_payload_size
from turnkeeper.contracts.activity_io import ModelCallResult
from turnkeeper.contracts.errors import LLM_PAYLOAD_REJECTED
from turnkeeper.contracts.messages import Message, TextBlock, ToolUseBlock
from turnkeeper.contracts.turn import Usage


def result(*blocks: TextBlock | ToolUseBlock) -> ModelCallResult:
    return ModelCallResult(
        message=Message(role="assistant", content=list(blocks)),
        stop_reason="end_turn",
        usage=Usage(),
        cost_usd=0.0,
        conversation_ref="sha256:" + "0" * 64,
        duration_ms=1,
    )


@pytest.mark.parametrize(
    "answer",
    [
        result(TextBlock(text="Hi.")),
        # Near the limit in characters but not in bytes: the full size is measured, and it fits.
        result(TextBlock(text="x" * (PAYLOAD_LIMIT_BYTES - 10_000))),
    ],
    ids=["a short answer", "a long answer under the limit"],
)
def test_an_answer_within_the_payload_limit_passes(answer: ModelCallResult) -> None:
    check_payload_size(answer)


@pytest.mark.parametrize(
    "answer",
    [
        result(TextBlock(text="x" * PAYLOAD_LIMIT_BYTES)),
        # A sixth of the limit in characters, but JSON escapes each control character to six.
        result(TextBlock(text="\x01" * (PAYLOAD_LIMIT_BYTES // 5))),
        result(
            ToolUseBlock(id="toolu_1", name="write_file", input={"c": "y" * PAYLOAD_LIMIT_BYTES})
        ),
    ],
    ids=["long text", "escaped text", "a tool call's input"],
)
def test_an_answer_over_the_payload_limit_fails_the_turn_at_once(answer: ModelCallResult) -> None:
    with pytest.raises(ApplicationError) as refused:
        check_payload_size(answer)

    assert refused.value.type == LLM_PAYLOAD_REJECTED
    assert refused.value.non_retryable
    assert "lower agent.max_tokens" in refused.value.message
