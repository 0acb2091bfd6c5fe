"""What `python worker.py` holds before its first turn: nothing of the console (typer, rich), of
structlog's pretty printing (rich, pygments, colorama) or of servers it does not run (aiohttp,
for the probes and the `--dev` codec server), nor RE2 before a file search. Each is memory every
idle worker pays (16 MiB together); each still loads when it is used."""

from __future__ import annotations

import json
import subprocess
import sys

_NOT_AT_START = ("rich", "typer", "pygments", "colorama", "aiohttp", "re2")

# A fresh interpreter, as a worker starts: the test process has imported all of them long ago.
_STARTING_WORKER = f"""
import json, sys
import turnkeeper.console.worker_cli
from turnkeeper.worker.logging import configure_logging
from turnkeeper.worker.wiring import workflow_runner
configure_logging("INFO")
workflow_runner()
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set({_NOT_AT_START!r}))))
"""

_USING_THEM = """
import asyncio, json, logging, sys
import turnkeeper.console.worker_cli
from turnkeeper.worker.logging import configure_logging
from turnkeeper.activities.tools.line_search import _compiled
from turnkeeper.worker.health import WorkerHealth, health_app
configure_logging("INFO")
try:
    raise KeyError("the traceback of a failure")
except KeyError:
    logging.getLogger("probe").exception("failed")
_compiled("a+b")
health_app(WorkerHealth.__new__(WorkerHealth))
import rich.console
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"re2", "aiohttp", "rich"})))
"""


def _run(probe: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def test_a_starting_worker_loads_no_console_pretty_printing_or_idle_servers() -> None:
    assert json.loads(_run(_STARTING_WORKER).stdout.splitlines()[-1]) == []


def test_what_a_worker_did_not_load_at_start_loads_when_used() -> None:
    done = _run(_USING_THEM)
    assert json.loads(done.stdout.splitlines()[-1]) == ["aiohttp", "re2", "rich"]
    # structlog without rich still renders a failure's traceback as JSON, frames included.
    line = json.loads(next(line for line in done.stderr.splitlines() if '"failed"' in line))
    assert line["exception"][0]["exc_type"] == "KeyError"
    assert line["exception"][0]["frames"]
