"""The model call's rate gate costs nothing where no limit applies: no round trip at all."""

from __future__ import annotations

from turnkeeper.activities.llm.rate_gate import RateGate, estimate_input_tokens
from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.contracts.activity_io import ConversationDelta, ModelCallInput
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.rate_limits import RateLimit
from turnkeeper.contracts.turn import Usage


def call(model: str) -> ModelCallInput:
    return ModelCallInput(
        iteration=1, model=model, max_tokens=64, conversation=ConversationDelta(append=[])
    )


REQUEST = ModelRequest(
    model="echo",
    system="x" * 400,
    messages=[Message(role="user", content="hello")],
    tools=[],
    max_tokens=64,
)


async def test_no_limit_no_round_trip() -> None:
    # No client at all: any call to Temporal would fail, so passing shows none was made.
    gate = RateGate(None, {"demo:*": RateLimit(requests_per_minute=1)})
    assert gate.key_of("demo:echo") is None
    assert await gate.acquire(call("demo:echo"), REQUEST) is None
    await gate.settle(None, Usage(input_tokens=5))
    await gate.back_off("demo:echo", 3.0)


async def test_a_model_without_an_entry_is_not_limited() -> None:
    gate = RateGate(object(), {"anthropic:*": RateLimit(requests_per_minute=1)})  # type: ignore[arg-type]
    assert gate.key_of("demo:echo") is None
    assert await gate.acquire(call("demo:echo"), REQUEST) is None
    assert gate.key_of("anthropic:claude-haiku-4-5") == "anthropic:*"


def test_input_estimate_counts_system_and_messages() -> None:
    assert estimate_input_tokens(REQUEST) > 100
