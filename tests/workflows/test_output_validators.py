"""`agent.output_validators` and typed output, on a real server with the scripted fake model:
a rejected answer goes back to the model, a spent budget fails with the last answer, and the
application's mistakes (a validator the worker lacks, one that breaks) fail the turn at once."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import BaseModel, field_validator
from temporalio.client import Client
from turnkeeper.activities.output.validators import OutputValidators

import turnkeeper
from tests.conftest import (
    TurnRunner,
    failure_of,
    make_settings,
    new_key,
    running_worker,
    scripted_request,
)
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from turnkeeper.testing import ScriptedModel, reply
from turnkeeper.testing.pytest_plugin import EnvironmentFactory


@turnkeeper.output_validator
def no_digits(text: str) -> None:
    if re.search(r"\d", text):
        raise turnkeeper.OutputRejected("write numbers out in words")


@turnkeeper.output_validator(name="broken")
async def broken_validator(text: str) -> None:
    raise KeyError("a bug in the application's validator")


class Verdict(BaseModel):
    title: str
    score: int

    @field_validator("score")
    @classmethod
    def _out_of_ten(cls, score: int) -> int:
        if not 0 <= score <= 10:
            raise ValueError("the score is out of ten")
        return score


@turnkeeper.output_validator
def scored_out_of_ten(output: Verdict) -> None:
    """Its type's own validator does the work: a score above ten is sent back."""


@pytest.fixture
async def turns(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    validators = OutputValidators([no_digits, broken_validator, scored_out_of_ten])
    async with running_worker(client, settings, fake_anthropic, output_validators=validators):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


async def test_a_rejected_answer_goes_back_and_the_next_is_accepted(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("It costs 42 dollars."), fake.text("Forty-two dollars.")])

    report = await turns.run(scripted_request(key, agent={"output_validators": ["no_digits"]}))

    assert report.output == "Forty-two dollars."
    assert report.llm_calls == 2
    correction = turns.fake.requests_for(key)[1].body["messages"][-1]
    assert "rejected by the output check 'no_digits': write numbers out in words" in str(correction)


async def test_a_spent_budget_fails_with_the_last_answer(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("1 apple."), fake.text("2 apples.")])
    request = scripted_request(key, agent={"output_validators": ["no_digits"], "max_iterations": 2})

    error, report = await failure_of(turns, request)

    assert error.type == "MaxIterationsExceeded"
    assert "output validator 'no_digits': write numbers out in words" in error.message
    assert report.output == "2 apples."
    assert report.llm_calls == 2


async def test_typed_output_is_checked_by_its_types_validators_and_read_back(
    turns: TurnRunner,
) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [fake.text('{"title": "Notes", "score": 11}'), fake.text('{"title": "Notes", "score": 9}')],
    )
    request = scripted_request(key, agent={"output_validators": ["scored_out_of_ten"]})

    handle = await turnkeeper.start_turn(
        turns.client, request, task_queue=turns.task_queue, output_type=Verdict
    )

    assert await handle.output() == Verdict(title="Notes", score=9)
    system = str(turns.fake.requests_for(key)[0].body["system"])
    assert '"additionalProperties": false' in system
    again = turnkeeper.turn(turns.client, handle.id)
    assert (await again.output(Verdict)).score == 9


async def test_a_validator_the_worker_lacks_fails_before_any_model_call(
    turns: TurnRunner,
) -> None:
    key = new_key()
    request = scripted_request(key, agent={"output_validators": ["no_digits", "no_pii"]})

    error, _ = await failure_of(turns, request)

    assert error.type == "InvalidTurnRequest"
    assert "no output validator named 'no_pii'" in error.message
    assert turns.fake.requests_for(key) == []


async def test_a_validator_that_breaks_fails_the_turn_at_once(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("An answer."), fake.text("Another.")])

    handle = await turnkeeper.start_turn(
        turns.client,
        scripted_request(key, agent={"output_validators": ["broken"]}),
        task_queue=turns.task_queue,
    )

    with pytest.raises(turnkeeper.OutputValidatorError) as failure:
        await handle.result()
    assert "'broken' raised KeyError" in failure.value.message
    assert failure.value.report is not None and failure.value.report.llm_calls == 1


async def test_the_test_kit_runs_a_turns_validators_and_types_its_output(
    turn_env: EnvironmentFactory,
) -> None:
    model = ScriptedModel(
        [reply('{"title": "Notes", "score": 11}'), reply('{"title": "Notes", "score": 8}')]
    )

    async with turn_env(model=model, output_validators=[scored_out_of_ten]) as env:
        handle = await env.start_turn(
            "Review the notes",
            agent={"output_validators": ["scored_out_of_ten"]},
            output_type=Verdict,
        )
        verdict = await handle.output()

    assert verdict == Verdict(title="Notes", score=8)
