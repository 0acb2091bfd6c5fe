"""The README's library quick start without an API key, run as the README prints it: its two
commands (the support worker, the client on `demo:tool-caller`) read out of the README and run
as processes, with no Anthropic or OpenAI variable in their environment, against the session's
dev server (standing in for `--dev`, which would start a server of its own on 7233). The answer
line the README quotes must be what the client prints."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.support.documented_commands import ROOT, documented_commands, without_assignments

README = ROOT / "README.md"


def readme_commands() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The README's commands that run `examples/support/worker.py` and `client.py`."""
    shown = [
        command.words
        for command in documented_commands()
        if command.where.startswith("README.md:") and command.complete
    ]
    worker = next(w for w in shown if "examples/support/worker.py" in w)
    client = next(w for w in shown if "examples/support/client.py" in w)
    return worker, client


def as_process(words: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """A documented command as this interpreter runs it: its variables, then its arguments."""
    command = without_assignments(words)
    assignments = dict(word.split("=", 1) for word in words[: len(words) - len(command)])
    assert command[0] == ".venv/bin/python", command
    return [sys.executable, *command[1:]], assignments


async def test_the_readmes_quick_start_runs_on_the_offline_model_without_a_key(
    client: Client, tmp_path: Path
) -> None:
    worker_words, client_words = readme_commands()
    worker_command, worker_variables = as_process(worker_words)
    client_command, client_variables = as_process(client_words)
    assert "--dev" in worker_command
    environment = {
        **{
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("ANTHROPIC_", "OPENAI_", "TEMPORAL_", "AGENT_"))
        },
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "AGENT_TASK_QUEUE": f"readme-{uuid.uuid4()}",
        "TURNKEEPER_DATA_DIR": str(tmp_path / "data"),
    }
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = await asyncio.create_subprocess_exec(
            *[word for word in worker_command if word != "--dev"],
            cwd=ROOT,
            env={**environment, **worker_variables},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            client_command,
            cwd=ROOT,
            env={**environment, **client_variables},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        worker.terminate()
        await asyncio.wait_for(worker.wait(), timeout=30)

    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\nworker: {log.read_text()}"
    quoted = re.findall(r"`(- refund\(.*?\) returned .*?)`", README.read_text(encoding="utf-8"))
    assert len(quoted) == 1 and quoted[0] in done.stdout.splitlines(), done.stdout
    assert "[offline tool-caller model] I called each tool once:" in done.stdout
    assert done.stdout.splitlines()[-1] == "cost: 0.0000 USD, 2 model calls"
