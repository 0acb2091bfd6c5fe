"""Evaluation runs on the real dev server, a real worker and the fake Anthropic server: cases
as child turns, scored in activities; the cross-check against pydantic-evals' own runner;
approvals decided by the run; a case that fails alone; a scorer nobody has; the cost cap."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_evals import Dataset
from pydantic_evals.dataset import set_eval_attribute
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from turnkeeper.activities.evals.datasets import load_dataset
from turnkeeper.activities.evals.registered import Evaluators
from turnkeeper.activities.evals.turn_facts import FACTS, TURN_FACT_EVALUATORS, turn_facts
from turnkeeper.contracts.evals import (
    ACTIVITY_CHECK_EVAL_SCORERS,
    EVAL_APPROVER,
    EVAL_RUN_WORKFLOW_TYPE,
    INVALID_EVAL_RUN,
    QUERY_EVAL_PROGRESS,
    EvalProgress,
    EvalRunInput,
)
from turnkeeper.contracts.search_attributes import (
    COST_USD_KEY,
    EVAL_PROGRESS,
    STARTED_BY,
)
from turnkeeper.workflows.evals import eval_run_workflow, shown_progress

import turnkeeper
from tests.conftest import make_settings, new_key, providers_for
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, script_marker
from tests.support.waiting import until
from turnkeeper.client.client import start_turn
from turnkeeper.http.evals import EvalRunService
from turnkeeper.worker.wiring import build_activities, worker_workflows, workflow_runner

_SCHEDULED = "activity_task_scheduled_event_attributes"
_MARKER = "marker_recorded_event_attributes"
_UPSERTED = "upsert_workflow_search_attributes_event_attributes"


@turnkeeper.evaluator
def polite(ctx: Any, word: str = "please") -> bool:
    """A worker's own scorer, with an argument the dataset gives."""
    return word in str(ctx.output).lower()


DATASET = """\
name: greetings
evaluators:
  - EqualsExpected
  - TurnOutcome
  - MaxIterations: 3
cases:
  - name: greets
    inputs: Say hi, please.
    expected_output: "Hi, please come in."
    evaluators:
      - polite: {word: come}
  - name: "asks / EU"
    inputs:
      task:
        input: Greet in French.
    expected_output: Bonjour.
    evaluators:
      - Contains: Hi
  - name: bad request
    inputs:
      agent:
        max_iterations: 0
"""


@asynccontextmanager
async def eval_worker(
    client: Client,
    fake_server: FakeAnthropic,
    tmp_path: Path,
    providers: dict[str, Any] | None = None,
) -> AsyncIterator[str]:
    """A worker with the `polite` scorer; its providers the fake's unless given."""
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    activities = build_activities(
        settings,
        client=client,
        providers=providers if providers is not None else providers_for(fake_server),
        evaluators=Evaluators([polite]),
    )
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=worker_workflows(),
        workflow_runner=workflow_runner(),
        activities=activities,
    )
    async with worker:
        yield settings.task_queue


def agent(key: str) -> dict[str, Any]:
    return {
        "agent": {
            "id": "greeter",
            "model": "anthropic:claude-sonnet-4-6",
            "system_prompt": f"Greet. {script_marker(key)}",
        }
    }


def greetings(
    fake_anthropic: FakeAnthropic, *, cases: int, concurrency: int
) -> tuple[str, EvalRunInput]:
    """A run of `cases` cases `c0`, `c1`, …, each a turn the fake answers "Hi." and that passes
    when it completes, and the fake's script key of their model calls."""
    key = new_key()
    fake_anthropic.script(key, [fake.text("Hi.")])
    return key, EvalRunInput(
        dataset="d",
        request=agent(key),
        models=["anthropic:claude-sonnet-4-6"],
        concurrency=concurrency,
        cases=[
            {"name": f"c{n}", "inputs": f"hi {n}", "evaluators": ["TurnOutcome"]}
            for n in range(cases)
        ],
    )


async def run_eval(
    client: Client,
    task_queue: str,
    run: EvalRunInput,
    run_id: str | None = None,
    started_by: str | None = None,
) -> EvalProgress:
    owner = [SearchAttributePair(STARTED_BY, started_by)] if started_by else []
    return await client.execute_workflow(
        EVAL_RUN_WORKFLOW_TYPE,
        run,
        id=run_id or f"eval-{uuid.uuid4()}",
        task_queue=task_queue,
        result_type=EvalProgress,
        search_attributes=TypedSearchAttributes(owner),
    )


async def test_an_eval_scores_each_case_as_pydantic_evals_own_runner_does(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Hi, please come in.")])
    path = tmp_path / "greetings.yaml"
    path.write_text(DATASET)
    name, cases = load_dataset(path)
    run = EvalRunInput(
        dataset=name, request=agent(key), models=["anthropic:claude-sonnet-4-6"], cases=cases
    )
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        run_id = f"eval-{uuid.uuid4()}"
        progress = await run_eval(client, task_queue, run, run_id)
        theirs = await _pydantic_evals_scores(client, task_queue, path, key)

    by_case = {r.case: r for r in progress.results}
    assert progress.total == 3 and len(progress.results) == 3
    greets, eu, bad = by_case["greets"], by_case["asks / EU"], by_case["bad request"]
    assert (
        greets.passed and greets.workflow_id == f"{run_id}/1.greets-1.anthropic:claude-sonnet-4-6-1"
    )
    assert {k: s.value for k, s in greets.scores.items()} == {
        "EqualsExpected": True,
        "TurnOutcome": True,
        "MaxIterations": True,
        "polite": True,
    }
    assert eu.workflow_id is not None and "/2.asks-EU-" in eu.workflow_id
    assert eu.scores["EqualsExpected"].value is False and not eu.passed
    # The invalid case failed alone, with its error, and started no turn.
    assert bad.outcome == "failed" and bad.workflow_id is None
    assert bad.error is not None and "max_iterations" in bad.error
    # The cross-check: pydantic-evals' own Dataset.evaluate over turns started by the library.
    for case in ("greets", "asks / EU"):
        ours = {k: s.value for k, s in by_case[case].scores.items()}
        assert ours == theirs[case], case


async def _pydantic_evals_scores(
    client: Client, task_queue: str, path: Path, key: str
) -> dict[str, dict[str, Any]]:
    """Scores by pydantic-evals' own runner: its task starts a turn with the library client and
    hands the scorers the turn's facts as the run does."""

    async def task(inputs: Any) -> Any:
        task = {"input": inputs} if isinstance(inputs, str) else inputs["task"]
        task = {"id": "eval-task", **task}
        handle = await start_turn(
            client, agent=agent(key)["agent"], task=task, task_queue=task_queue
        )
        report = await handle.result()
        set_eval_attribute(FACTS, turn_facts(report, report.messages, structured=False))
        return report.output

    dataset = Dataset[Any, Any, Any].from_file(
        path, custom_evaluator_types=[*TURN_FACT_EVALUATORS, polite.evaluator_type()]
    )
    dataset.cases = [c for c in dataset.cases if c.name != "bad request"]
    report = await dataset.evaluate(task, progress=False)
    assert not report.failures, [f.error_message for f in report.failures]
    return {
        case.name: {
            **{k: v.value for k, v in case.assertions.items()},
            **{k: v.value for k, v in case.scores.items()},
            **{k: v.value for k, v in case.labels.items()},
        }
        for case in report.cases
    }


async def test_approvals_are_decided_by_the_run_and_recorded_per_case(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [fake.tool_calls(("write_file", {"path": "x.md", "content": "x"})), fake.text("Done.")],
    )
    cases = [{"name": "writes", "inputs": "Write x.", "evaluators": ["ApprovalRequested"]}]
    request = agent(key)
    request["agent"]["tools"] = ["write_file"]
    request["task"] = {"constraints": {"require_approval": ["write_file"]}}
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        for mode, approved in (("reject", False), ("approve", True)):
            run = EvalRunInput(
                dataset="writes",
                request=request,
                models=["anthropic:claude-sonnet-4-6"],
                approvals=mode,
                cases=cases,
            )
            [result] = (await run_eval(client, task_queue, run)).results
            assert result.approvals == [
                {"tool": "write_file", "approved": approved, "approver": EVAL_APPROVER}
            ]
            assert result.scores["ApprovalRequested"].value is True


async def test_an_unknown_scorer_fails_the_run_before_any_case_starts(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Hi.")])
    run = EvalRunInput(
        dataset="d",
        request=agent(key),
        models=["anthropic:claude-sonnet-4-6"],
        cases=[{"name": "a", "inputs": "hi", "evaluators": ["no_such_scorer"]}],
    )
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        with pytest.raises(WorkflowFailureError) as failure:
            await run_eval(client, task_queue, run)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_EVAL_RUN
    assert "'no_such_scorer'" in cause.message and "polite" in cause.message
    assert fake_anthropic.requests_for(key) == []


async def test_the_cost_cap_stops_starting_cases(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    # $0.045 a call: the first case spends the run's $0.01 (its own budget was checked before
    # the call, against an estimate of the prompt alone).
    fake_anthropic.script(
        key, [fake.text("Hi.", usage={"input_tokens": 10_000, "output_tokens": 1_000})]
    )
    run = EvalRunInput(
        dataset="d",
        request=agent(key),
        models=["anthropic:claude-sonnet-4-6"],
        repeat=3,
        concurrency=1,
        max_cost_usd=0.01,
        cases=[{"name": "a", "inputs": "hi"}],
    )
    run_id = f"eval-{uuid.uuid4()}"
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        progress = await run_eval(client, task_queue, run, run_id, started_by="mia")
    assert [r.outcome for r in progress.results] == ["completed", "skipped", "skipped"]
    assert progress.spent_usd == pytest.approx(0.045)
    assert progress.results[1].error == "not started: the run's cost cap ($0.01) was spent"
    assert len(fake_anthropic.requests_for(key)) == 1
    # What the HTTP API reads of it: its owner, its results, and the owner's listing.
    service = EvalRunService(client)
    assert await service.read(run_id) == (progress, "mia")
    listed = await until(
        lambda: service.list_runs("mia", 20),
        lambda runs: any(r.run_id == run_id for r in runs),
        "the run in mia's listing",
    )
    [mine] = [r for r in listed if r.run_id == run_id]
    assert (mine.status, mine.started_by) == ("completed", "mia")
    assert mine.cost_usd == pytest.approx(0.045)


async def test_a_long_run_continues_as_new_and_runs_each_case_once(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of 2 stand for the 100 a run starts before it continues as new.
    monkeypatch.setattr(eval_run_workflow, "BATCH", 2)
    key, run = greetings(fake_anthropic, cases=5, concurrency=2)
    run_id = f"eval-{uuid.uuid4()}"
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        progress = await run_eval(client, task_queue, run, run_id)
        # A client following the run asks only for the results it has not seen.
        tail = await client.get_workflow_handle(run_id).query(
            QUERY_EVAL_PROGRESS, 3, result_type=EvalProgress
        )
    assert (tail.results_from, tail.results) == (3, progress.results[3:])
    assert sorted(r.case for r in progress.results) == [f"c{n}" for n in range(5)]
    assert all(r.passed for r in progress.results)
    assert len(fake_anthropic.requests_for(key)) == 5  # no case ran twice
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{run_id}'")]
    assert len(runs) == 3  # 2 + 2 + 1 cases: each run's history holds one batch
    sizes = [
        (await client.get_workflow_handle(run_id, run_id=w.run_id).fetch_history()).events
        for w in runs
    ]
    assert max(len(events) for events in sizes) < 60
    # Each case is scored by a local activity in the run's own workflow task (a worker killed
    # while it scores loses the task, which another worker runs again at once): the only
    # activity a run schedules is the first one's check of the scorers, which heartbeats, so a
    # worker killed while it checks is noticed in 20 s, not after the 5 minutes it may take.
    scheduled = [e for events in sizes for e in events if e.HasField(_SCHEDULED)]
    [check] = [getattr(e, _SCHEDULED) for e in scheduled]
    assert check.activity_type.name == ACTIVITY_CHECK_EVAL_SCORERS
    assert check.heartbeat_timeout.ToTimedelta() == timedelta(seconds=20)
    markers = [e for events in sizes for e in events if e.HasField(_MARKER)]
    assert len(markers) == 5 + 3  # a score per case, and the patch's marker in each run
    # The Web UI's list shows the run's progress, counted across its continued runs.
    listed = (await client.get_workflow_handle(run_id).describe()).typed_search_attributes
    assert listed.get(EVAL_PROGRESS) == "5/5"
    assert listed.get(COST_USD_KEY) == pytest.approx(sum(r.cost_usd for r in progress.results))


async def test_the_web_ui_list_is_written_at_the_first_end_and_when_the_run_ends(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An hour between writes: every case after the first ends inside it, so the writes are
    # the first end's and the one the run makes before it ends, whatever the machine's speed.
    monkeypatch.setattr(shown_progress, "SHOW_EVERY", timedelta(hours=1))
    _, run = greetings(fake_anthropic, cases=4, concurrency=4)
    run_id = f"eval-{uuid.uuid4()}"
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        progress = await run_eval(client, task_queue, run, run_id)
    handle = client.get_workflow_handle(run_id)
    events = (await handle.fetch_history()).events
    upserts = [getattr(e, _UPSERTED).search_attributes for e in events if e.HasField(_UPSERTED)]
    # (The SDK writes `TemporalChangeVersion` when the run asks for its patch.)
    writes = [fields for fields in upserts if EVAL_PROGRESS.name in fields.indexed_fields]
    assert len(writes) == 2
    listed = (await handle.describe()).typed_search_attributes
    assert listed.get(EVAL_PROGRESS) == "4/4"
    assert listed.get(COST_USD_KEY) == pytest.approx(sum(r.cost_usd for r in progress.results))


async def test_an_llm_judge_is_a_priced_call_inside_the_runs_budget(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pydantic-evals' LLMJudge, through pydantic-ai's Anthropic model and the anthropic SDK, to
    # the fake: the judge's answer is its structured-output tool call, billed like any answer.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    key, judge_key = new_key(), new_key()
    fake_anthropic.script(key, [fake.text("Hi.", usage={"input_tokens": 10, "output_tokens": 2})])
    verdict = {"reason": "It greets.", "pass": True, "score": 1.0}
    # $1 / $5 per million tokens (claude-haiku-4-5): 1,000 in and 100 out cost $0.0015 a call.
    judged = fake.tool_calls(
        ("final_result", verdict), usage={"input_tokens": 1000, "output_tokens": 100}
    )
    fake_anthropic.script(judge_key, [judged])
    judge = {"rubric": f"The answer greets. {script_marker(judge_key)}"}
    priced = {"LLMJudge": {**judge, "model": "anthropic:claude-haiku-4-5"}}
    unpriced = {"LLMJudge": {**judge, "model": "anthropic:claude-nobody-knows"}}
    cases = [
        {"name": "judged", "inputs": "hi", "evaluators": [priced]},
        {"name": "unpriced", "inputs": "hi", "evaluators": [unpriced]},
    ]
    run = EvalRunInput(
        dataset="d",
        request=agent(key),
        models=["anthropic:claude-sonnet-4-6"],
        concurrency=1,
        max_cost_usd=1.0,
        cases=cases,
    )
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        progress = await run_eval(client, task_queue, run)

    judged_case, unpriced_case = progress.results
    assert judged_case.passed and judged_case.scores["LLMJudge"].value is True
    assert judged_case.judge_cost_usd == pytest.approx(0.0015)
    turn_cost = judged_case.cost_usd
    assert turn_cost > 0 and judged_case.total_cost_usd == pytest.approx(turn_cost + 0.0015)
    # A capped run does not let a judge it cannot price run free: that scorer fails the case,
    # without a call (the judge was asked once, by the first case).
    assert not unpriced_case.passed and "LLMJudge" not in unpriced_case.scores
    assert "'anthropic:claude-nobody-knows' has no price" in unpriced_case.scorer_errors["LLMJudge"]
    assert len(fake_anthropic.requests_for(judge_key)) == 1
    # The run's budget counts both cases' turns and the priced judge.
    assert progress.spent_usd == pytest.approx(
        judged_case.cost_usd + unpriced_case.cost_usd + 0.0015
    )
