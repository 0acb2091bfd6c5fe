"""An evaluation recorded with a cassette replays offline with the same scores: a run's model
calls recorded against the fake Anthropic server, then the same dataset as a new run (another
run id, so other case turn ids) on a worker that answers from the cassette with no provider
reachable."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider
from turnkeeper.activities.providers.cassette_provider import CassetteSettings, with_cassette
from turnkeeper.contracts.evals import CaseResult, EvalRunInput

from tests.conftest import new_key, providers_for
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, script_marker
from tests.workflows.test_cassettes import CLOSED_PORT_URL
from tests.workflows.test_eval_runs import agent, eval_worker, run_eval

MODELS = ["anthropic:claude-sonnet-4-6", "anthropic:claude-haiku-4-5"]


def case(name: str, key: str, expected: str) -> dict[str, Any]:
    """A case with a script of its own: it lists the workspace, then answers."""
    return {
        "name": name,
        "inputs": {
            "agent": {"system_prompt": f"Greet. {script_marker(key)}"},
            "task": {"input": f"List the files, then greet ({name})."},
        },
        "expected_output": expected,
        "evaluators": [{"ToolCalled": {"tool": "list_files"}}, {"polite": {"word": "please"}}],
    }


def scored(result: CaseResult) -> tuple[Any, ...]:
    """What a case run came to, less its wall time (a replay is faster)."""
    scores = {name: score.value for name, score in result.scores.items()}
    return (
        result.outcome,
        scores,
        result.scorer_errors,
        result.output,
        result.cost_usd,
        result.iterations,
    )


async def test_an_eval_recorded_on_a_cassette_replays_offline_with_the_same_scores(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    keys = {name: new_key() for name in ("greets", "misses")}
    for name, key in keys.items():
        fake_anthropic.script(
            key, [fake.tool_calls(("list_files", {"path": "."})), fake.text(f"Hi {name}, please.")]
        )
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "guests.md").write_text("Ada\n")
    request = agent(new_key())
    request["agent"]["tools"] = ["list_files"]
    run = EvalRunInput(
        dataset="greetings",
        request=request,
        models=MODELS,
        concurrency=4,
        cases=[
            case("greets", keys["greets"], "Hi greets, please."),
            case("misses", keys["misses"], "Bonjour."),
        ],
    )
    # pydantic-evals' EqualsExpected, as the dataset file would name it for every case.
    for one in run.cases:
        one.evaluators.insert(0, "EqualsExpected")
    path = tmp_path / "eval.cassette"

    recording = with_cassette(providers_for(fake_anthropic), CassetteSettings(path, "record"))
    async with eval_worker(client, fake_anthropic, tmp_path, recording) as task_queue:
        recorded = await run_eval(client, task_queue, run, f"eval-{uuid.uuid4()}")
    calls = {name: len(fake_anthropic.requests_for(key)) for name, key in keys.items()}
    assert calls == {"greets": 4, "misses": 4}  # two calls a case, on each model

    dead = {"anthropic": AnthropicProvider(api_key="test-key", base_url=CLOSED_PORT_URL)}
    replaying = with_cassette(dead, CassetteSettings(path, "replay"))
    async with eval_worker(client, fake_anthropic, tmp_path, replaying) as task_queue:
        replayed = await run_eval(client, task_queue, run, f"eval-{uuid.uuid4()}")

    assert {name: len(fake_anthropic.requests_for(key)) for name, key in keys.items()} == calls
    mine = {(r.case, r.model, r.repetition): scored(r) for r in replayed.results}
    theirs = {(r.case, r.model, r.repetition): scored(r) for r in recorded.results}
    assert mine == theirs
    assert len(mine) == 4 and all(outcome == "completed" for outcome, *_ in mine.values())
    # Scores that can fail, and did where they should: a replay that scored everything alike
    # would not pass.
    equals = {key: value[1]["EqualsExpected"] for key, value in mine.items()}
    assert equals == {
        ("greets", MODELS[0], 1): True,
        ("greets", MODELS[1], 1): True,
        ("misses", MODELS[0], 1): False,
        ("misses", MODELS[1], 1): False,
    }
    assert all(value[1]["ToolCalled"] and value[1]["polite"] for value in mine.values())
    # Summed in the order the cases ended, which differs between the runs.
    assert recorded.spent_usd > 0 and replayed.spent_usd == pytest.approx(recorded.spent_usd)
