"""`agent.output_schema`: the final answer is JSON that fits it, or the model is asked again."""

from __future__ import annotations

from tests.conftest import TurnRunner, failure_of, new_key, scripted_request
from tests.fakes import fake_anthropic as fake

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["title", "score"],
    "additionalProperties": False,
}


async def test_a_fitting_answer_becomes_the_structured_output(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text('{"title": "Notes", "score": 7}')])

    report = await turns.run(scripted_request(key, agent={"output_schema": SCHEMA}))

    assert report.structured_output == {"title": "Notes", "score": 7}
    system = turns.fake.requests_for(key)[0].body["system"]
    assert "JSON Schema" in str(system) and '"score"' in str(system)


async def test_an_answer_that_does_not_fit_is_sent_back_to_correct(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(
        key,
        [
            fake.text("The title is Notes and the score is seven."),
            fake.text('{"title": "Notes", "score": "seven"}'),
            fake.text('```json\n{"title": "Notes", "score": 7}\n```'),
        ],
    )

    report = await turns.run(scripted_request(key, agent={"output_schema": SCHEMA}))

    assert report.structured_output == {"title": "Notes", "score": 7}
    assert report.llm_calls == 3
    not_json, not_fitting = report.messages[2].text(), report.messages[4].text()
    assert "it is not JSON" in not_json
    assert "at 'score'" in not_fitting and "integer" in not_fitting


async def test_an_invalid_output_schema_is_refused_up_front(turns: TurnRunner) -> None:
    key = new_key()
    request = scripted_request(key, agent={"output_schema": {"type": "no-such-type"}})

    error, _ = await failure_of(turns, request)

    assert error.type == "InvalidTurnRequest"
    assert "agent.output_schema" in error.message
    assert turns.fake.requests_for(key) == []


async def test_answers_that_never_fit_fail_with_the_last_one(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.text("Seven."), fake.text("Still seven.")])
    request = scripted_request(key, agent={"output_schema": SCHEMA, "max_iterations": 2})

    error, report = await failure_of(turns, request)

    assert error.type == "MaxIterationsExceeded"
    assert "last answer was still rejected (it does not fit output_schema)" in error.message
    assert report.output == "Still seven."
