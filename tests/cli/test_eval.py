"""`turnkeeper eval`, `eval show` and `eval compare` as a user runs them: one run through the
real command (its own process) against the suite's server and an in-process worker on the fake
Anthropic server; the refusals before anything starts, in-process."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic, script_marker
from tests.support.console_runs import invoke
from tests.workflows.test_eval_runs import eval_worker

DATASET = """\
name: smoke
evaluators:
  - TurnOutcome
cases:
  - name: greets
    inputs: Say hi.
    evaluators:
      - Contains: Hi
  - name: shouts
    inputs: Shout.
    evaluators:
      - Contains: HEY
"""
MODEL = "anthropic:claude-sonnet-4-6"


def files(tmp_path: Path, key: str) -> tuple[Path, Path]:
    dataset = tmp_path / "smoke.yaml"
    dataset.write_text(DATASET)
    agent = tmp_path / "agent.json"
    agent.write_text(
        json.dumps({"id": "greeter", "model": MODEL, "system_prompt": script_marker(key)})
    )
    return dataset, agent


def address(client: Client) -> list[str]:
    return ["--address", client.service_client.config.target_host]


async def test_eval_prints_cases_writes_reports_and_gates(
    client: Client, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Hi there.")])
    dataset, agent = files(tmp_path, key)
    run_id = f"eval-{uuid.uuid4().hex[:8]}"
    reports = tmp_path / "reports"
    async with eval_worker(client, fake_anthropic, tmp_path) as task_queue:
        command = [str(Path(sys.executable).parent / "turnkeeper"), "eval", str(dataset)]
        command += ["--agent", str(agent), "--id", run_id, "--report", str(reports)]
        command += ["--fail-under", "0.9", "--task-queue", task_queue, *address(client)]
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
        shown = await invoke("eval", "show", run_id, "--cases", *address(client))
        compared = await invoke("eval", "compare", run_id, run_id, *address(client))

    printed, said = stdout.decode(), stderr.decode()
    assert process.returncode == 1, said  # half the cases pass: under --fail-under 0.9
    assert "pass rate 0.500 is under --fail-under 0.9" in said
    assert f"✓ greets [{MODEL}] #1" in printed
    assert f"✗ shouts [{MODEL}] #1" in printed and "Contains: failed" in printed
    suites = ET.parse(reports / "junit.xml").getroot()
    [suite] = suites
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    [failed] = [case for case in suite if case.find("failure") is not None]
    assert failed.get("name") == "shouts #1"
    report = json.loads((reports / "report.json").read_text())
    assert report["summary"][0]["pass_rate"] == 0.5 and report["run_id"] == run_id
    assert "<svg" in (reports / "index.html").read_text()
    assert shown.exit_code == 0, shown.output
    assert "1/2" in shown.output and "✗ shouts" in shown.output
    assert compared.exit_code == 0 and "better: 0" in compared.output
    assert "worse: 0" in compared.output and "unchanged: 2" in compared.output


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--repeat", "0"], "Invalid value for '--repeat'"),
        (["--model", "no-provider"], "--model no-provider: agent.model: Value error, model must"),
        (["--id", "a/b"], "--id: id 'a/b' is reserved"),
    ],
)
async def test_eval_refuses_bad_flags_before_starting_anything(
    client: Client, tmp_path: Path, arguments: list[str], says: str
) -> None:
    dataset, agent = files(tmp_path, new_key())
    run_id = ["--id", f"eval-{uuid.uuid4().hex[:8]}"] if "--id" not in arguments else []
    result = await invoke(
        "eval", str(dataset), "--agent", str(agent), *run_id, *arguments, *address(client)
    )
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.split())
    if run_id:
        with pytest.raises(RPCError):
            await client.get_workflow_handle(run_id[1]).describe()


async def test_a_dataset_that_does_not_load_is_named_with_its_line_and_field(
    client: Client, tmp_path: Path
) -> None:
    dataset = tmp_path / "broken.yaml"
    dataset.write_text("cases:\n  - name: a\n    inputs: hi\n    expected_outptu: 3\n")
    _, agent = files(tmp_path, new_key())
    result = await invoke("eval", str(dataset), "--agent", str(agent), *address(client))
    assert result.exit_code == 2
    assert f"{dataset}:4: field cases.0.expected_outptu: Extra inputs are not permitted" in (
        " ".join(result.output.split())
    )
