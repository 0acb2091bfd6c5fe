"""The examples run as a user runs them: the support worker and client as processes, the web app
over HTTP, all against the session's dev server and the fake Anthropic API. The fake finds its
script through the `[script:KEY]` marker in the task input, so the examples carry no test hooks.
The support example's own tests (examples/support/test_support.py, on the test kit) run here as
a team's CI runs them, with pytest in a process of their own; the evaluation example
(examples/evals) runs on the offline demo model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
from temporalio.client import Client

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).parent.parent
SUPPORT = ROOT / "examples" / "support"


@pytest.fixture
def example_env(client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path) -> dict[str, str]:
    """What a user exports before running the examples, on a task queue of this test's own."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "AGENT_TASK_QUEUE": f"examples-{uuid.uuid4()}",
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": "test",
        "TURNKEEPER_DATA_DIR": str(tmp_path / "data"),
        "AGENT_WORKSPACE": str(workspace),
    }


@contextlib.contextmanager
def running(script: str, example_env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """`python examples/support/<script>` (or `script`, an absolute path) running; yields the
    file its output goes to."""
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, str(SUPPORT / script)],
            cwd=ROOT,
            env=example_env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        process.terminate()
        process.wait(timeout=30)


async def run_client(
    command: list[str], example_env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """An example's client run to its end, as a user runs it, its output captured."""
    return await asyncio.to_thread(
        subprocess.run,
        command,
        cwd=ROOT,
        env=example_env,
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.fixture
def support_worker(example_env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    with running("worker.py", example_env, tmp_path) as log:
        yield log


@pytest.fixture(params=["worker.py", "own_worker.py"])
def any_support_worker(
    request: pytest.FixtureRequest, example_env: dict[str, str], tmp_path: Path
) -> Iterator[Path]:
    """The agent's worker of turnkeeper's alone, or the team's own worker with the plugin."""
    with running(request.param, example_env, tmp_path) as log:
        yield log


async def test_support_client_approves_a_refund_that_happens_once(
    fake_anthropic: FakeAnthropic, example_env: dict[str, str], any_support_worker: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("lookup_order", {"order_id": "1042"})),
            fake.tool_calls(("refund", {"order_id": "1042", "amount_usd": 25.0})),
            fake.text("Refunded."),
        ],
    )
    command = [
        sys.executable,
        str(SUPPORT / "client.py"),
        f"Refund order 1042, it arrived broken. [script:{key}]",
        "--approver",
        "alice",
    ]

    done = await run_client(command, example_env)

    assert done.returncode == 0, (
        f"{done.stdout}\n{done.stderr}\nworker: {any_support_worker.read_text()}"
    )
    lines = done.stdout.splitlines()
    assert '  tool call: lookup_order {"order_id": "1042"}' in lines
    assert '  approving refund {"order_id": "1042", "amount_usd": 25.0} as alice' in lines
    refunds = [line for line in lines if "Refunded 25.00 USD on order 1042" in line]
    assert refunds == ["  tool result: Refunded 25.00 USD on order 1042 (refund R-1)"]
    assert lines[-2:-1] == ["Refunded."]
    assert lines[-1].startswith("cost: ")


async def test_the_teams_own_worker_still_runs_its_survey_workflow(
    client: Client, example_env: dict[str, str], tmp_path: Path
) -> None:
    with running("own_worker.py", example_env, tmp_path) as log:
        sent = await client.execute_workflow(
            "SurveyWorkflow",
            {"order_id": "1042", "email": "ada@example.com"},
            id=f"survey-{uuid.uuid4()}",
            task_queue=example_env["AGENT_TASK_QUEUE"],
            result_type=str,
            execution_timeout=timedelta(seconds=60),
        )

    assert sent == "survey for order 1042 sent to ada@example.com", log.read_text()


async def test_web_app_streams_a_turn_to_its_end(
    fake_anthropic: FakeAnthropic,
    example_env: dict[str, str],
    support_worker: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("TEMPORAL_ADDRESS", "AGENT_TASK_QUEUE", "TURNKEEPER_DATA_DIR"):
        monkeypatch.setenv(name, example_env[name])
    from examples.web.app import app

    key = new_key()
    fake_anthropic.script(
        key,
        [fake.tool_calls(("lookup_order", {"order_id": "1043"})), fake.text("It has shipped.")],
    )
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://test") as http,
    ):
        started = await http.post("/turns", json={"input": f"Where is order 1043? [script:{key}]"})
        assert started.status_code == 201, started.text
        turn_id = started.json()["turn_id"]
        async with asyncio.timeout(60):
            stream = await http.get(f"/turns/{turn_id}/events")

    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line.removeprefix("data: "))
        for line in stream.text.splitlines()
        if line.startswith("data: ")
    ]
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "turn_started"
    assert "tool_call_started" in kinds
    assert kinds[-1] == "turn_finished"
    assert events[-1]["outcome"] == "completed"


def test_the_support_examples_own_tests_pass_on_the_test_kit(tmp_path: Path) -> None:
    """`pytest examples/support` as a team's CI runs it: the kit's plugin comes in through its
    entry point and starts a dev server of its own; no key, no network."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANTHROPIC_", "TEMPORAL_", "TURNKEEPER_", "AGENT_"))
    }
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SUPPORT)],
        cwd=ROOT,
        env={**environment, "AGENT_WORKSPACE": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-2000:]
    assert "3 passed" in finished.stdout


async def test_subagents_client_approves_the_writers_file_through_the_lead(
    fake_anthropic: FakeAnthropic, example_env: dict[str, str], tmp_path: Path
) -> None:
    lead, researcher, writer = new_key(), new_key(), new_key()
    workspace = Path(example_env["AGENT_WORKSPACE"])
    (workspace / "notes.md").write_text("The launch is on 3 March.\n")
    content = "# Launch\n\nThe launch is on 3 March (notes.md).\n"
    # Each child's task carries its script's marker: the fake reads it from the first message.
    fake_anthropic.script(
        lead,
        [
            fake.tool_calls(
                ("researcher", {"task": f"When is the launch? [script:{researcher}]"}),
                ("writer", {"task": f"Write launch.md: 3 March. [script:{writer}]"}),
            ),
            fake.text("launch.md is written."),
        ],
    )
    fake_anthropic.script(
        researcher,
        [fake.tool_calls(("read_file", {"path": "notes.md"})), fake.text("3 March (notes.md).")],
    )
    fake_anthropic.script(
        writer,
        [
            fake.tool_calls(("write_file", {"path": "launch.md", "content": content})),
            fake.text("Saved launch.md."),
        ],
    )
    command = [
        sys.executable,
        str(ROOT / "examples" / "subagents" / "client.py"),
        f"Write up the launch dates. [script:{lead}]",
    ]

    # The repository's own worker: the team uses only its built-in workspace tools.
    with running(str(ROOT / "worker.py"), example_env, tmp_path) as log:
        done = await run_client(command, example_env)

    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\nworker: {log.read_text()}"
    lines = done.stdout.splitlines()
    root = lines[0].removeprefix("turn ")
    approvals = [line for line in lines if line.startswith("  approving write_file")]
    assert approvals == [
        f"  approving write_file {json.dumps({'path': 'launch.md', 'content': content})} "
        f"in {root}/writer-1 as alice"
    ]
    assert (workspace / "launch.md").read_text() == content
    children = sorted(line.split(":")[0] for line in lines if line.startswith("  sub-agent"))
    assert children == [
        f"  sub-agent researcher ({root}/researcher-1)",
        f"  sub-agent writer ({root}/writer-1)",
    ]
    assert lines[-2:-1] == ["launch.md is written."]
    assert lines[-1].startswith("cost: ")


async def test_the_evals_example_passes_every_case_on_a_fresh_checkout(
    example_env: dict[str, str], tmp_path: Path
) -> None:
    """`python examples/evals/worker.py` then `turnkeeper eval` as docs/evals.md prints them,
    with an empty workspace (a fresh checkout's): the worker writes the sample notes the cases
    read, and every case passes on the offline demo model."""
    evals = ROOT / "examples" / "evals"
    turnkeeper_command = str(Path(sys.executable).parent / "turnkeeper")
    command = [turnkeeper_command, "eval", "examples/evals/summaries.yaml"]
    command += ["--agent", "examples/evals/agent.json", "--task-queue"]
    with running(str(evals / "worker.py"), example_env, tmp_path):
        ran = await run_client([*command, example_env["AGENT_TASK_QUEUE"]], example_env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count("✓ ") == 3 and "✗" not in ran.stdout, ran.stdout
    assert sorted(path.name for path in (tmp_path / "workspace").iterdir()) == [
        "ideas.md",
        "meeting-notes.md",
        "reading-list.md",
    ]
