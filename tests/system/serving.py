"""`turnkeeper serve` as its own process beside a worker, for the tests of the HTTP API: started
with the options a test gives, waited for until it answers, stopped afterwards, and its log
checked for tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import httpx2 as httpx

from tests.conftest import temporal_binary
from tests.support.ports import free_ports
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess, _spawn


@asynccontextmanager
async def serving(
    stack: SystemStack,
    worker: WorkerProcess,
    *options: str,
    env: Mapping[str, str] | None = None,
    log_name: str = "serve.log",
) -> AsyncIterator[str]:
    """The URL of `turnkeeper serve --tokens tokens.json … options` for `worker`'s task queue
    (`env` adds to the worker's variables); its log is `log_name` in the test's folder."""
    [port] = free_ports(1)
    command = [temporal_binary("turnkeeper"), "serve", "--tokens", "tokens.json"]
    log = stack.tmp_path / log_name
    environment = {**worker.environment, **(env or {})}
    process = _spawn([*command, "--port", str(port), *options], stack.tmp_path, environment, log)
    url = f"http://127.0.0.1:{port}"

    async def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(log.read_text()[-3000:])
        try:
            async with httpx.AsyncClient() as http:
                return (await http.get(url + "/")).status_code == 200
        except httpx.TransportError:
            return False

    await until(answers, bool, "turnkeeper serve to answer")
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert "tk_" not in log.read_text(), "a token reached the server's log"
