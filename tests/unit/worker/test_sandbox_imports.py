"""Every module that workflow code imports inside a function is loaded before the sandbox runs,
in a fresh interpreter as a user's worker starts: the sandbox cannot load some native extensions
itself (`cryptography` failed a signed turn's first task with a SystemError in `python
worker.py`), and the test process, which had imported them long before, never noticed."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import turnkeeper.contracts
import turnkeeper.workflows

PACKAGES = [Path(turnkeeper.contracts.__file__).parent, Path(turnkeeper.workflows.__file__).parent]


def _imported_in_functions(source: str) -> set[str]:
    names: set[str] = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    return {name for name in names if not name.startswith("turnkeeper")}


def test_a_fresh_worker_has_loaded_every_module_workflow_code_imports_late() -> None:
    late = set().union(
        *(_imported_in_functions(path.read_text()) for p in PACKAGES for path in p.rglob("*.py"))
    )
    assert "cryptography.hazmat.primitives.serialization" in late  # the scan sees them
    probe = (
        "import json, sys\n"
        "from turnkeeper.worker.wiring import workflow_runner\n"
        "workflow_runner()\n"
        f"print(json.dumps(sorted(set({sorted(late)!r}) - set(sys.modules))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
