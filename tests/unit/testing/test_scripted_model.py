"""`ScriptedModel` answering model calls as the worker's provider would, without a server: the
steps it plays, the checks on what it is sent, and the bad scripts it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from turnkeeper.activities.providers.provider import ModelCallError, ModelRequest
from turnkeeper.contracts.messages import Message, ToolUseBlock
from turnkeeper.contracts.tools import ToolDefinition

from turnkeeper.testing import Conversation, ScriptedModel, ScriptError, call, reply
from turnkeeper.testing.checked_handle import raise_script_errors
from turnkeeper.testing.scripted_model import ScriptedProvider

TOOLS = ["lookup_order", "refund"]


def request(messages: list[dict[str, Any]], tools: list[str] = TOOLS) -> ModelRequest:
    return ModelRequest(
        model="support",
        messages=[Message.model_validate(m) for m in messages],
        tools=[ToolDefinition(name=name, description=name, input_schema={}) for name in tools],
        max_tokens=100,
    )


def results_for(answer: list[Any], *texts: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": use.id, "content": text}
            for use, text in zip(answer, texts, strict=True)
        ],
    }


def provider_with(model: ScriptedModel) -> ScriptedProvider:
    provider = ScriptedProvider()
    model.name = "support"
    provider.add(model)
    return provider


TASK = {"role": "user", "content": "Refund order 1042"}


async def test_it_plays_calls_parallel_calls_a_function_and_a_reply() -> None:
    seen: list[Conversation] = []

    def last(conversation: Conversation) -> Any:
        seen.append(conversation)
        return reply(f"Done: {conversation.results[0].text()}")

    model = ScriptedModel(
        [
            call("lookup_order", order_id="1042"),
            [call("refund", order_id="1042", amount_usd=25.0), call("lookup_order", order_id="1")],
            last,
        ]
    )
    provider = provider_with(model)
    messages: list[dict[str, Any]] = [TASK]

    first = await provider.complete(request(messages))
    assert first.stop_reason == "tool_use"
    assert [(b.name, b.input) for b in first.content] == [("lookup_order", {"order_id": "1042"})]
    messages += [{"role": "assistant", "content": first.content}, results_for(first.content, "ok")]

    second = await provider.complete(request(messages))
    assert [b.name for b in second.content] == ["refund", "lookup_order"]
    assert len({b.id for b in second.content}) == 2
    messages += [
        {"role": "assistant", "content": second.content},
        results_for(second.content, "refunded", "ok"),
    ]

    third = await provider.complete(request(messages))
    assert third.stop_reason == "end_turn"
    assert third.content[0].text == "Done: refunded"
    assert seen[0].tools == TOOLS and seen[0].step == 2
    assert model.calls == 3 and model.errors == []


async def test_an_async_function_step_is_awaited() -> None:
    async def answer(conversation: Conversation) -> Any:
        return call("lookup_order", order_id=conversation.messages[0].text()[-4:])

    provider = provider_with(ScriptedModel([answer]))
    response = await provider.complete(request([TASK]))
    assert response.content[0].input == {"order_id": "1042"}


async def test_a_retried_call_gets_the_same_answer_not_the_next_step() -> None:
    provider = provider_with(ScriptedModel([call("lookup_order", order_id="1"), reply("no")]))
    first = await provider.complete(request([TASK]))
    again = await provider.complete(request([TASK]))
    assert again.content == first.content


async def test_more_model_calls_than_steps_fail_the_turn_and_the_test() -> None:
    model = ScriptedModel([call("lookup_order", order_id="1042")])
    provider = provider_with(model)
    first = await provider.complete(request([TASK]))
    messages = [TASK, {"role": "assistant", "content": first.content}]
    messages.append(results_for(first.content, "ok"))

    with pytest.raises(ModelCallError) as refused:
        await provider.complete(request(messages))

    assert refused.value.retryable is False
    assert "asked for model call 2, but the script has 1 step(s)" in str(refused.value)
    with pytest.raises(ScriptError, match=r"the last was lookup_order\(order_id='1042'\)"):
        raise_script_errors([model])


async def test_a_step_calling_a_tool_the_agent_lacks_names_it_and_the_offered_ones() -> None:
    model = ScriptedModel([call("delete_everything")])
    with pytest.raises(ModelCallError, match="'delete_everything', which the agent does not"):
        await provider_with(model).complete(request([TASK]))
    assert "it offers lookup_order, refund" in str(model.errors[0])


async def test_results_not_paired_with_the_calls_are_a_script_error() -> None:
    model = ScriptedModel([call("lookup_order", order_id="1"), reply("done")])
    provider = provider_with(model)
    first = await provider.complete(request([TASK]))
    stray = ToolUseBlock(id="toolu_other", name="lookup_order", input={})
    messages = [TASK, {"role": "assistant", "content": first.content}, results_for([stray], "x")]

    with pytest.raises(ModelCallError, match="carried results for \\['toolu_other'\\]"):
        await provider.complete(request(messages))


async def test_a_function_step_that_returns_no_step_is_a_script_error() -> None:
    model = ScriptedModel([lambda conversation: 42])
    with pytest.raises(ModelCallError, match="returned is int 42"):
        await provider_with(model).complete(request([TASK]))


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([call("refund"), 42], "step 1 is int 42: a step is call"),
        ([[call("refund"), reply("no")]], "step 0, item 1, is Reply"),
        ([[]], "step 0 is an empty list"),
        ("reply", "a list of steps"),
    ],
)
def test_a_step_of_no_known_kind_is_refused_when_the_script_is_written(
    steps: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        ScriptedModel(steps)


def test_call_and_reply_refuse_what_they_cannot_send() -> None:
    with pytest.raises(TypeError, match="tool's name first"):
        call("")
    with pytest.raises(TypeError, match="answer's text"):
        reply(3)  # type: ignore[arg-type]


async def test_a_model_string_naming_no_scripted_model_is_refused() -> None:
    provider = ScriptedProvider()
    with pytest.raises(ModelCallError, match="no ScriptedModel is named 'support'"):
        await provider.complete(request([TASK]))
