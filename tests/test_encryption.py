"""Payload encryption end to end, on the dev stack of `worker.py --dev` with its SQLite file.

What a turn says (its input, a file a tool read) must be absent from the server's database and
from the content store, and present in the report our client reads; the same after a key
rotation; a client or a worker without the key says which key it lacks, in one line.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.names import SIGNAL_APPROVE
from turnkeeper.contracts.turn import AgentReport
from typer.testing import CliRunner

from tests.conftest import new_key, scripted_request, wait_for_pending
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.console_runs import restore_logging  # noqa: F401 (autouse fixture)
from tests.support.encrypted_stack import (
    NEW_KEY,
    OLD_KEY,
    deployment,
    encrypted_dev_stack,
    occurrences,
    server_files,
    store_files,
)
from turnkeeper.client.events import turn_events
from turnkeeper.console.cli import app
from turnkeeper.devtools.devserver import DevServer
from turnkeeper.payloads.keyring import new_key_entry

REPO: Final = Path(__file__).resolve().parents[1]
# Over 1 KiB, so the tool's output travels through external storage, not inline.
FILE_LINE: Final = "lighthouse ledger entry: keeper-vermilion-4417 logged the storm.\n"


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevServer]:
    root = tmp_path_factory.mktemp("encrypted-stack")
    async with encrypted_dev_stack(root, OLD_KEY) as server:
        yield server


def reading_turn(key: str, phrase: str) -> dict[str, object]:
    return scripted_request(key, task={"input": f"Summarise the dossier {phrase}."})


async def run_reading_turn(
    server: DevServer, root: Path, keys: str, fake_server: FakeAnthropic, phrase: str, secret: str
) -> tuple[AgentReport, Path]:
    """One turn that reads a > 1 KiB file; its report and its deployment's store folder."""
    deployed = await deployment(server, root, keys, fake_server)
    (deployed.settings.workspace / "dossier.md").write_text(FILE_LINE.replace("4417", secret) * 20)
    key = new_key()
    fake_server.script(
        key, [fake.tool_calls(("read_file", {"path": "dossier.md"})), fake.text("Summarised.")]
    )
    async with deployed.worker() as queue:
        handle = await deployed.start(reading_turn(key, phrase), queue)
        report = await handle.result()
    return report, deployed.settings.store_dir


async def test_a_turns_content_is_on_neither_the_server_nor_the_store(
    stack: DevServer, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    phrase, secret = "quartz-heron-9025", "4417"
    report, store_dir = await run_reading_turn(
        stack, tmp_path / "encrypted", OLD_KEY, fake_anthropic, phrase, secret
    )
    # Our client reads it all back.
    text = report.model_dump_json()
    assert phrase in text and f"keeper-vermilion-{secret}" in text

    # Control: the same turn without keys leaves its phrases readable where the scan looks.
    plain_report, plain_store = await run_reading_turn(
        stack, tmp_path / "plain", "", fake_anthropic, "plain-otter-1187", "5521"
    )
    assert plain_report.outcome == "completed"
    plain = occurrences(
        ["plain-otter-1187", "keeper-vermilion-5521"],
        [*server_files(stack), *store_files(plain_store)],
    )
    assert plain["plain-otter-1187"] > 0 and plain["keeper-vermilion-5521"] > 0, plain

    found = occurrences(
        [phrase, f"keeper-vermilion-{secret}"], [*server_files(stack), *store_files(store_dir)]
    )
    print(f"\nplaintext occurrences with encryption on: {found} (without: {plain})")
    assert found == {phrase: 0, f"keeper-vermilion-{secret}": 0}


async def test_a_parked_turn_finishes_after_a_key_rotation(
    stack: DevServer, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(
        key,
        [
            fake.tool_calls(("write_file", {"path": "out.md", "content": "rotated-pelican-3301"})),
            fake.text("Written."),
        ],
    )
    before = await deployment(stack, tmp_path, OLD_KEY, fake_anthropic)
    queue = f"tq-{uuid.uuid4()}"
    async with before.worker(queue):
        handle = await before.start(scripted_request(key), queue)
        [call] = (await wait_for_pending(handle)).pending

    # The new key goes first; the old one stays to read what it wrote.
    after = await deployment(stack, tmp_path, f"{NEW_KEY},{OLD_KEY}", fake_anthropic)
    async with after.worker(queue):
        rotated = after.client.get_workflow_handle(handle.id, result_type=AgentReport)
        approval = {"call_id": call.call_id, "approved": True, "reason": "maroon-lynx-5150"}
        await rotated.signal(SIGNAL_APPROVE, approval)
        report = await rotated.result()
    assert report.output == "Written."
    assert (after.settings.workspace / "out.md").read_text() == "rotated-pelican-3301"

    history = (await rotated.fetch_history()).to_json()
    # Payloads of both keys, told apart by their `encryption-key-id` metadata (base64 in JSON).
    for key_id in (b"old-key", b"new-key"):
        assert base64.b64encode(key_id).decode() in history
    assert "rotated-pelican-3301" not in history
    store = store_files(after.settings.store_dir)
    secrets = ["rotated-pelican-3301", "maroon-lynx-5150"]
    found = occurrences(secrets, [*server_files(stack), *store])
    assert found == dict.fromkeys(secrets, 0)


async def test_a_failed_turns_partial_report_and_message_are_encrypted(
    stack: DevServer, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.tool_calls(("list_files", {"path": "."}))] * 2)
    deployed = await deployment(stack, tmp_path, OLD_KEY, fake_anthropic)
    request = scripted_request(
        key, agent={"max_iterations": 1}, task={"input": "List cobalt-falcon-8123."}
    )
    async with deployed.worker() as queue:
        handle = await deployed.start(request, queue)
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    error = failure.value.cause
    assert isinstance(error, ApplicationError) and error.type == "MaxIterationsExceeded"
    assert "max_iterations" in error.message  # our client decodes the encrypted message
    assert "cobalt-falcon-8123" in AgentReport.model_validate(error.details[0]).model_dump_json()

    history = (await handle.fetch_history()).to_json()
    assert "MaxIterationsExceeded" in history  # the type stays readable: it is no content
    assert "max_iterations" not in history and "cobalt-falcon-8123" not in history
    found = occurrences(["cobalt-falcon-8123"], server_files(stack))
    assert found == {"cobalt-falcon-8123": 0}


async def test_a_client_without_the_key_says_which_key_it_lacks(
    stack: DevServer, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Done.")])
    deployed = await deployment(stack, tmp_path, OLD_KEY, fake_anthropic)
    env = {"TURNKEEPER_ENCRYPTION_KEYS": new_key_entry("stranger")}
    # The worker stays up: it answers the `status` query (with content under the old key).
    async with deployed.worker() as queue:
        handle = await deployed.start(scripted_request(key), queue)
        await handle.result()
        for command in (["status", handle.id], ["result", handle.id]):
            result = await asyncio.to_thread(
                CliRunner().invoke, app, [*command, "--address", stack.address], env=env
            )
            assert result.exit_code == 1, result.output
            lines = result.output.strip().splitlines()
            assert len(lines) == 1, result.output
            assert "'old-key'" in lines[0] and "TURNKEEPER_ENCRYPTION_KEYS" in lines[0]
            assert "stranger" in lines[0]


async def test_a_worker_without_the_key_stops_and_names_it(
    stack: DevServer, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    fake_anthropic.script(key, [fake.text("Done.")])
    deployed = await deployment(stack, tmp_path, OLD_KEY, fake_anthropic)
    queue = f"tq-{uuid.uuid4()}"
    handle = await deployed.start(scripted_request(key), queue)
    env = {
        **os.environ,
        "TURNKEEPER_ENCRYPTION_KEYS": new_key_entry("stranger"),
        "TEMPORAL_ADDRESS": stack.address,
        "AGENT_TASK_QUEUE": queue,
        "TURNKEEPER_DATA_DIR": str(tmp_path / "stranger"),
    }
    worker = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "worker.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert worker.returncode == 1, worker.stderr
    assert "Traceback" not in worker.stderr
    last = worker.stderr.strip().splitlines()[-1]
    assert last.startswith("worker stopped: ") and "'old-key'" in last, worker.stderr

    # Nothing is lost: a worker with the key finishes the turn.
    async with deployed.worker(queue):
        assert (await handle.result()).output == "Done."


async def test_the_event_stream_of_an_encrypted_streaming_turn_reads_back(
    stack: DevServer, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    key = new_key()
    answer = "The ledger of indigo-walrus-7042 is balanced."
    fake_anthropic.script(key, [fake.text(answer)])
    deployed = await deployment(stack, tmp_path, OLD_KEY, fake_anthropic)
    async with deployed.worker() as queue:
        handle = await deployed.start(scripted_request(key, agent={"stream": True}), queue)
        await handle.result()
        events = [event async for event in turn_events(deployed.client, handle.id)]
    deltas = "".join(e.text or "" for e in events if e.kind == "text_delta")
    assert deltas == answer and events[-1].kind == "turn_finished"
    assert occurrences(["indigo-walrus-7042"], server_files(stack)) == {"indigo-walrus-7042": 0}
