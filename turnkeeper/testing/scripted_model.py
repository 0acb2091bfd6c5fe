"""`ScriptedModel`: a model provider that answers a turn's model calls from a script, in-process.

It plugs into a worker as one more provider (`scripted:<name>` model strings), so the turn runs
through the real model-call activity, the real tool loop, approvals and budgets: only the
network call to a model is replaced. Not a fake HTTP server (as the project's own suite uses):
a test's script is Python (functions of the conversation included), which a server in another
task cannot hold as simply.

Each call is checked against what it was sent: the results of the previous step's calls must be
paired with them, and a step's calls must name tools the agent offers. A mismatch fails the turn
(LLMInvalidRequest, not retried) and is kept as a `ScriptError`, which the test kit raises in the
test.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from typing import Final

from temporalio import activity

from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelRequest,
    ModelResponse,
    TextSink,
    estimate_input_tokens,
)
from turnkeeper.contracts.errors import LLM_INVALID_REQUEST
from turnkeeper.contracts.messages import ContentBlock, TextBlock, ToolUseBlock
from turnkeeper.contracts.turn import Usage
from turnkeeper.testing.script import (
    STEP_KINDS,
    Answer,
    Conversation,
    Reply,
    ScriptError,
    Step,
    ToolCall,
    answer_calls,
    check_step,
    describe,
)

PROVIDER_NAME: Final = "scripted"


class ScriptedModel:
    """A model that answers from a script, one step per model call.

        model = ScriptedModel([
            call("lookup_order", order_id="1042"),
            [call("refund", order_id="1042", amount_usd=25.0), call("notify", to="ada")],
            lambda conversation: reply(f"Done: {conversation.results[0].text()}"),
        ])

    Args:
        steps: `call(tool, **input)`, a list of calls (the model asks for them at once; the
            turn runs them in parallel), `reply(text)` (the final answer), or a function of the
            `Conversation` returning one of those (sync or async).
        name: The model's name in `scripted:<name>` (default: given by the test environment).

    Attributes:
        errors: The `ScriptError`s the turns met, in order.
        calls: How many model calls the script has answered.

    Raises:
        TypeError: A step is none of the above (the message names the step).
    """

    def __init__(self, steps: Sequence[Step], *, name: str | None = None) -> None:
        if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
            raise TypeError(f"ScriptedModel takes a list of steps ({STEP_KINDS})")
        self.steps: list[Step] = [
            check_step(step, f"step {index}") for index, step in enumerate(steps)
        ]
        self.name = name
        self.errors: list[ScriptError] = []
        self.calls = 0
        # (workflow id, length of the conversation) -> the step that answered it: a retried
        # call gets the same answer rather than the next step.
        self._answered: dict[tuple[str, int], tuple[int, list[ContentBlock]]] = {}
        self._last_step: dict[str, int] = {}

    @property
    def model(self) -> str:
        """The model string an agent names it by, `scripted:<name>`."""
        if self.name is None:
            raise ValueError("this ScriptedModel has no name yet: give it to a test environment")
        return f"{PROVIDER_NAME}:{self.name}"

    async def answer(self, request: ModelRequest) -> list[ContentBlock]:
        """The content of the answer to `request`; raises ScriptError on a mismatch."""
        turn = _turn_id()
        key = (turn, len(request.messages))
        if key in self._answered:
            return self._answered[key][1]
        step = self._last_step.get(turn, -1) + 1
        self._check_results(request, turn)
        if step >= len(self.steps):
            raise ScriptError(
                f"the turn asked for model call {step + 1}, but the script has "
                f"{len(self.steps)} step(s); the last was {describe(self.steps[-1])}"
                if self.steps
                else "the turn asked for a model call, but the script has no steps"
            )
        conversation = Conversation(
            messages=list(request.messages),
            system=request.system,
            tools=[tool.name for tool in request.tools],
            step=step,
        )
        answer = await self._play(self.steps[step], conversation)
        _check_offered(answer, conversation, step)
        content = _content(answer, step)
        self._answered[key] = (step, content)
        self._last_step[turn] = step
        self.calls += 1
        return content

    async def _play(self, step: Step, conversation: Conversation) -> Answer:
        if isinstance(step, ToolCall | Reply | tuple):
            return step
        answer = step(conversation)  # type: ignore[operator]
        if inspect.isawaitable(answer):
            answer = await answer
        try:
            checked = check_step(answer, f"step {conversation.step} ({describe(step)}) returned")
        except TypeError as err:
            raise ScriptError(str(err)) from None
        if callable(checked) and not isinstance(checked, ToolCall | Reply | tuple):
            raise ScriptError(
                f"step {conversation.step} ({describe(step)}) returned a function: it must "
                "return call(...), reply(...) or a list of call(...)"
            )
        return checked  # type: ignore[return-value]

    def _check_results(self, request: ModelRequest, turn: str) -> None:
        """The last message answers every call of the previous step, and nothing else."""
        previous = self._last_step.get(turn)
        if previous is None:
            return
        asked = _answered_calls(self._answered, turn, previous)
        if not asked:
            return
        conversation = Conversation(list(request.messages), request.system, [], previous)
        got = {result.tool_use_id for result in conversation.results}
        if got != set(asked):
            raise ScriptError(
                f"step {previous} called {', '.join(f'{i} ({n})' for i, n in asked.items())}, "
                f"but the next model call carried results for {sorted(got) or 'none'}"
            )


class ScriptedProvider:
    """The worker's `scripted` provider: routes `scripted:<name>` to the model of that name."""

    name = PROVIDER_NAME
    # Never behind a cassette: the script is the recording.
    scripted = True

    def __init__(self) -> None:
        self.models: dict[str, ScriptedModel] = {}

    def add(self, model: ScriptedModel) -> str:
        """Registers `model` (naming it if it has no name) and returns its model string."""
        if model.name is None:
            model.name = f"model-{len(self.models) + 1}"
        known = self.models.setdefault(model.name, model)
        if known is not model:
            raise ValueError(f"two ScriptedModels are named {model.name!r}")
        return model.model

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        model = self.models.get(request.model)
        if model is None:
            raise _refusal(
                f"no ScriptedModel is named {request.model!r} "
                f"(known: {', '.join(sorted(self.models)) or 'none'})"
            )
        try:
            content = await model.answer(request)
        except ScriptError as err:
            model.errors.append(err)
            raise _refusal(f"ScriptedModel: {err}") from None
        if on_text is not None:
            for block in content:
                if isinstance(block, TextBlock):
                    on_text(block.text)
        uses = any(isinstance(block, ToolUseBlock) for block in content)
        answer_size = sum(len(json.dumps(block.model_dump(mode="json"))) for block in content)
        usage = Usage(
            input_tokens=estimate_input_tokens(request), output_tokens=max(1, answer_size // 4)
        )
        return ModelResponse(
            content=content,
            stop_reason="tool_use" if uses else "end_turn",
            usage=usage,
            model=request.model,
        )

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return estimate_input_tokens(request)


def _refusal(message: str) -> ModelCallError:
    # Not retried: the same script gives the same answer to the same call.
    return ModelCallError(message, error_type=LLM_INVALID_REQUEST, retryable=False)


def _turn_id() -> str:
    """The workflow of the running model-call activity ("" outside one, in a unit test)."""
    try:
        return activity.info().workflow_id or ""
    except RuntimeError:
        return ""


def _check_offered(answer: Answer, conversation: Conversation, step: int) -> None:
    for tool_call in answer_calls(answer):
        if tool_call.tool not in conversation.tools:
            offered = ", ".join(conversation.tools) or "no tools"
            raise ScriptError(
                f"step {step} calls {tool_call.tool!r}, which the agent does not offer (it "
                f"offers {offered}); give the tool to the environment and name it in "
                "agent.tools, or fix the script"
            )


def _content(answer: Answer, step: int) -> list[ContentBlock]:
    if isinstance(answer, Reply):
        return [TextBlock(text=answer.text)]
    return [
        ToolUseBlock(id=f"toolu_scripted_{step}_{index}", name=item.tool, input=dict(item.input))
        for index, item in enumerate(answer_calls(answer))
    ]


def _answered_calls(
    answered: dict[tuple[str, int], tuple[int, list[ContentBlock]]], turn: str, step: int
) -> dict[str, str]:
    """Call id -> tool of the calls `step` made in `turn`."""
    for (answered_turn, _), (answered_step, content) in answered.items():
        if answered_turn == turn and answered_step == step:
            return {b.id: b.name for b in content if isinstance(b, ToolUseBlock)}
    return {}
