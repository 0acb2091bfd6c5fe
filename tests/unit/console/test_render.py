"""What the console prints of a report's cost: a cost nobody knows is said, never shown as $0."""

from __future__ import annotations

from rich.console import Console
from turnkeeper.contracts.sandbox import SandboxReport
from turnkeeper.contracts.signals import TurnStatus
from turnkeeper.contracts.turn import AgentReport

from turnkeeper.console import render
from turnkeeper.console.render import cost_words
from turnkeeper.console.target import Target


def report(cost: float, llm_calls: int, unpriced: int) -> AgentReport:
    return AgentReport(
        agent_id="a", task_id="t", outcome="completed", cost_usd=cost, llm_calls=llm_calls,
        unpriced_calls=unpriced,
    )  # fmt: skip


def test_a_priced_turn_shows_its_cost() -> None:
    assert cost_words(report(0.0123, 3, 0), 4) == "$0.0123"


def test_a_turn_with_some_calls_nobody_priced_says_how_many() -> None:
    assert cost_words(report(0.0123, 3, 1), 4) == "$0.0123 + 1 call of unknown cost"
    assert cost_words(report(0.0123, 3, 2), 4) == "$0.0123 + 2 calls of unknown cost"


def test_a_turn_nobody_priced_has_an_unknown_cost_not_zero() -> None:
    words = cost_words(report(0.0, 2, 2), 6)

    assert words.startswith("unknown") and "$" not in words


def test_the_report_and_the_status_list_the_skills_loaded_only_when_there_are_some() -> None:
    console = Console(width=200, record=True)
    loaded = report(0.01, 1, 0).model_copy(update={"skills_loaded": ["house-tone", "refunds"]})
    render.report(console, report(0.01, 1, 0))
    render.report(console, loaded)
    status = TurnStatus(state="running", skills_loaded=["refunds"])
    render.status(console, "wf-1", status, Target(address="localhost:7999", namespace="default"))

    lines = [line for line in console.export_text().splitlines() if "skills loaded" in line]
    assert [line.split("skills loaded")[1].strip(" │") for line in lines] == [
        "house-tone, refunds",
        "refunds",
    ]


def test_the_report_and_the_status_say_who_started_the_turn_only_when_someone_did() -> None:
    console = Console(width=200, record=True)
    render.report(console, report(0.01, 1, 0))
    render.report(console, report(0.01, 1, 0).model_copy(update={"started_by": "alice"}))
    status = TurnStatus(state="running", started_by="[bold]bob[/]")
    render.status(console, "wf-1", status, Target(address="localhost:7999", namespace="default"))

    lines = [line for line in console.export_text().splitlines() if "started by" in line]
    assert [line.split("started by")[1].strip(" │") for line in lines] == ["alice", "[bold]bob[/]"]


def test_the_report_lists_the_sandbox_files_only_of_a_turn_that_ran_code() -> None:
    console = Console(width=200, record=True)
    sandbox = SandboxReport(ref="sha256:x", files=["out.csv", "plots/a.png"])
    render.report(console, report(0.01, 1, 0))
    render.report(console, report(0.01, 1, 0).model_copy(update={"sandbox": sandbox}))

    lines = [line for line in console.export_text().splitlines() if "sandbox files" in line]
    assert [line.split("sandbox files")[1].strip(" │") for line in lines] == [
        "out.csv, plots/a.png"
    ]
