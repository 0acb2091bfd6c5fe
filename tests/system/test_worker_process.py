"""`python worker.py` as an operator runs it: refused configurations, `--log-level`, the health
port, SIGTERM in the middle of a model call, and `--dev` with its embedded dev server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.system.conftest import WORKER_SCRIPT, SystemStack, run, user_environment

PROVIDERS, KEYS, MCP = "TURNKEEPER_PROVIDERS", "TURNKEEPER_ENCRYPTION_KEYS", "TURNKEEPER_MCP_CONFIG"
# A variable set wrongly, and what the one line must name.
_WRONG = [
    pytest.param(PROVIDERS, '{"local": ', f"{PROVIDERS} is not JSON", id="providers-json"),
    pytest.param(
        PROVIDERS, '{"local": {"kind": "grpc", "base_url": "http://x"}}', f"{PROVIDERS}.local.kind",
        id="provider-field",
    ),
    pytest.param(KEYS, "k1:c2hvcnQ=", KEYS, id="encryption-key"),
    pytest.param(MCP, "/nonexistent/mcp.json", "/nonexistent/mcp.json", id="mcp-config"),
]  # fmt: skip


@pytest.mark.parametrize(("variable", "value", "named"), _WRONG)
async def test_a_wrong_configuration_stops_the_worker_with_one_line(
    stack: SystemStack, tmp_path: Path, variable: str, value: str, named: str
) -> None:
    environment = user_environment(TEMPORAL_ADDRESS=stack.address, **{variable: value})

    done = await run([sys.executable, str(WORKER_SCRIPT)], env=environment, cwd=tmp_path)

    output = (done.stdout + done.stderr).strip()
    assert done.returncode != 0
    assert len(output.splitlines()) == 1 and named in output, output
    assert "Traceback" not in output
    if variable == KEYS:
        assert value.partition(":")[2] not in output  # a key is never printed, even a bad one
