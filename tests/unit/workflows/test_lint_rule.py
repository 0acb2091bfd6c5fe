"""The banned-API rule of workflows/ruff.toml: clocks, randomness and I/O fail `ruff check .`
in workflow modules, and only there.

Ruff reads the source from stdin under a file name inside the real tree, so it applies the real,
nearest config to it exactly as `ruff check .` would to a file saved there, and nothing is written
into the source tree.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def banned_api_findings(source: str, relative_path: str) -> list[str]:
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--output-format",
            "concise",
            "--select",
            "TID251",
            "--stdin-filename",
            str(ROOT / relative_path),
            "-",
        ],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert checked.returncode in (0, 1), checked.stderr
    return [line for line in checked.stdout.splitlines() if "TID251" in line]


@pytest.mark.parametrize(
    ("source", "pointer"),
    [
        ("import time\n\nstarted = time.time()\n", "workflow.now()"),
        ("from time import monotonic\n\nstarted = monotonic()\n", "workflow.now()"),
        ("import time\n\ntime.sleep(1)\n", "workflow.sleep()"),
        (
            "import asyncio\n\n\nasync def f() -> None:\n    await asyncio.sleep(1)\n",
            "workflow.sleep()",
        ),
        ("from datetime import datetime\n\nstarted = datetime.now()\n", "workflow.now()"),
        ("import datetime\n\nstarted = datetime.datetime.utcnow()\n", "workflow.now()"),
        ("from datetime import date\n\nday = date.today()\n", "workflow.now()"),
        ("import random\n\nroll = random.random()\n", "workflow.random()"),
        ("import uuid\n\nkey = uuid.uuid4()\n", "workflow.uuid4()"),
        ("import os\n\nkey = os.environ['KEY']\n", "activity"),
        ("import os\n\nkey = os.getenv('KEY')\n", "activity"),
        ("from pathlib import Path\n\ntext = Path('x').read_text()\n", "activity"),
        ("import subprocess\n\nsubprocess.run(['ls'], check=True)\n", "activity"),
        ("import socket\n\nsocket.create_connection(('a', 1))\n", "activity"),
        ("import urllib.request\n\nurllib.request.urlopen('http://a')\n", "activity"),
        ("import httpx\n\nhttpx.get('http://a')\n", "activity"),
        ("import requests\n\nrequests.get('http://a')\n", "activity"),
    ],
)
def test_a_workflow_module_may_not_reach_clocks_randomness_or_io(source: str, pointer: str) -> None:
    findings = banned_api_findings(source, "workflows/_lint_probe.py")
    assert findings, f"ruff let this through in workflows/:\n{source}"
    assert all(pointer in finding for finding in findings), findings


def test_the_rule_reaches_helper_modules_in_any_workflows_subfolder() -> None:
    assert banned_api_findings("import time\n\nt = time.time()\n", "workflows/sub/_probe.py")


def test_the_same_code_outside_workflows_is_left_alone() -> None:
    source = "import time\nimport uuid\n\nstarted = time.time()\nkey = uuid.uuid4()\n"
    assert banned_api_findings(source, "activities/_lint_probe.py") == []
    assert banned_api_findings(source, "tests/workflows/_lint_probe.py") == []


def test_what_workflows_may_use_passes() -> None:
    source = (
        "from datetime import timedelta\n\nfrom temporalio import workflow\n\n\n"
        "async def f() -> None:\n"
        "    started = workflow.now()\n"
        "    await workflow.sleep(timedelta(seconds=1))\n"
        "    key = workflow.uuid4()\n"
        "    roll = workflow.random().random()\n"
        "    print(started, key, roll)\n"
    )
    assert banned_api_findings(source, "workflows/_lint_probe.py") == []


def test_the_workflows_tree_passes_today() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "TID251", "workflows"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
