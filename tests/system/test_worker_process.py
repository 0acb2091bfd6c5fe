"""`python worker.py` as an operator runs it: refused configurations, `--log-level`, the health
port, SIGTERM in the middle of a model call, and `--dev` with its embedded dev server."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import psutil
import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as anthropic
from tests.support.ports import free_ports
from tests.support.waiting import until
from tests.system.conftest import (
    WORKER_SCRIPT,
    SystemStack,
    WorkerProcess,
    run,
    user_environment,
)
from tests.system.driving import SONNET, agent, connect_like, task
from tests.test_devserver import port_is_open

BAD_KEY = "k1:c2hvcnQ="  # base64 of 5 bytes, not 32


def wrong_settings(folder: Path) -> dict[str, tuple[dict[str, str], str]]:
    """Settings a user can get wrong, each with what the one line the worker stops with names."""
    profiles = folder / "temporal.toml"
    profiles.write_text('[profile.prod]\naddress = "127.0.0.1:1"\n')
    bad_kind = '{"local": {"kind": "grpc", "base_url": "http://x"}}'
    return {
        "providers not JSON": (
            {"TURNKEEPER_PROVIDERS": '{"local": '},
            "TURNKEEPER_PROVIDERS is not JSON",
        ),
        "provider field": ({"TURNKEEPER_PROVIDERS": bad_kind}, "TURNKEEPER_PROVIDERS.local.kind"),
        "encryption key": ({"TURNKEEPER_ENCRYPTION_KEYS": BAD_KEY}, "TURNKEEPER_ENCRYPTION_KEYS"),
        "MCP config": ({"TURNKEEPER_MCP_CONFIG": "/nonexistent/mcp.json"}, "/nonexistent/mcp.json"),
        "store URL": (
            {"TURNKEEPER_STORE_URL": "minio.local/bucket"},
            "TURNKEEPER_STORE_URL must be s3://",
        ),
        "workspace": ({"AGENT_WORKSPACE": "/dev/null/workspace"}, "AGENT_WORKSPACE"),
        "skills folder": (
            {"TURNKEEPER_SKILLS_DIR": "/nonexistent/skills"},
            "TURNKEEPER_SKILLS_DIR: the skills folder /nonexistent/skills cannot be read",
        ),
        "health host": (
            {"TURNKEEPER_HEALTH_PORT": "0", "TURNKEEPER_HEALTH_HOST": "192.0.2.1"},
            "TURNKEEPER_HEALTH_HOST",
        ),
        "address": (
            {"TEMPORAL_ADDRESS": "127.0.0.1:99999"},
            "'127.0.0.1:99999' is not a Temporal address",
        ),
        "profile": (
            {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "staging"},
            "Profile 'staging' not found",
        ),
        "namespace": (
            {"TEMPORAL_NAMESPACE": "no-such-namespace"},
            "Namespace 'no-such-namespace' does not exist",
        ),
    }


async def test_each_wrong_setting_stops_the_worker_with_one_line(
    stack: SystemStack, tmp_path: Path
) -> None:
    cases = wrong_settings(tmp_path)

    async def start(variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
        environment = user_environment(**{"TEMPORAL_ADDRESS": stack.address, **variables})
        return await run([sys.executable, str(WORKER_SCRIPT)], env=environment, cwd=tmp_path)

    # All at once: each is a fresh interpreter that stops within its first seconds.
    done = await asyncio.gather(*(start(variables) for variables, _ in cases.values()))

    wrong = []
    for (case, (_, named)), stopped in zip(cases.items(), done, strict=True):
        output = (stopped.stdout + stopped.stderr).strip()
        if stopped.returncode == 0 or len(output.splitlines()) != 1 or named not in output:
            wrong.append(f"{case}: exit {stopped.returncode}:\n{output[-1500:]}")
    assert wrong == [], "\n\n".join(wrong)
    key_line = done[list(cases).index("encryption key")].stderr
    assert BAD_KEY.partition(":")[2] not in key_line  # a key is never printed, even a bad one


async def probe(port: int, path: str) -> tuple[int, str]:
    """GET a path of the health port: its status and body (0 when nothing answers)."""
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}{path}") as response,
        ):
            return response.status, await response.text()
    except aiohttp.ClientError as refused:
        return 0, str(refused)


async def health_worker(stack: SystemStack, **env: str) -> tuple[WorkerProcess, int]:
    """A worker with its probes on a free port, once `/readyz` says it is ready."""
    [port] = free_ports(1)
    worker = await stack.start_worker(env={"TURNKEEPER_HEALTH_PORT": str(port), **env})
    await until(lambda: probe(port, "/readyz"), lambda answer: answer[0] == 200, "ready")
    return worker, port


async def test_the_health_port_answers_probes_and_serves_the_turn_metrics(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, port = await health_worker(stack, OTEL_METRICS_EXPORTER="prometheus")
    key = new_key()
    stack.fake.script(key, [anthropic.text("Healthy.")])
    client = await connect_like(worker, monkeypatch)

    handle = await turnkeeper.start_turn(client, agent=agent(key), task=task(key))
    await handle.result()

    assert (await probe(port, "/healthz"))[0] == 200
    status, metrics = await probe(port, "/metrics")
    assert status == 200
    [completed] = [
        line for line in metrics.splitlines()
        if line.startswith("turnkeeper_turns_total{") and 'outcome="completed"' in line
    ]  # fmt: skip
    assert completed.endswith(" 1.0"), completed


async def test_sigterm_drains_the_model_call_in_flight_and_exits_0(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, port = await health_worker(stack)
    key = new_key()
    listing = anthropic.tool_calls(("list_files", {"path": "."}))
    stack.fake.script(key, [anthropic.slow(listing, 2.0), anthropic.text("Done.")])
    client = await connect_like(worker, monkeypatch)
    handle = await turnkeeper.start_turn(client, agent=agent(key), task=task(key))
    await stack.fake.wait_for_requests(key, 1, timeout_s=30)

    worker.process.send_signal(signal.SIGTERM)
    status, why = await until(lambda: probe(port, "/readyz"), lambda a: a[0] != 200, "not ready")
    exit_code = await asyncio.to_thread(worker.process.wait, 30)

    assert (status, exit_code) == (503, 0), why
    assert "draining" in why
    assert [line["stop_reason"] for line in worker.events("llm_call")] == ["tool_use"]
    # The drained call's answer is in history: the next worker goes on from it, never asks again.
    shared = {"TURNKEEPER_DATA_DIR": worker.environment["TURNKEEPER_DATA_DIR"]}  # one store
    await stack.start_worker(task_queue=worker.task_queue, env=shared)
    report = await handle.result()
    assert (report.output, report.llm_calls) == ("Done.", 2)
    assert [request.step for request in stack.fake.requests_for(key)] == [0, 1]


async def test_a_second_sigterm_stops_at_once(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [anthropic.slow(anthropic.text("Too late."), 60.0)])
    client = await connect_like(worker, monkeypatch)
    await turnkeeper.start_turn(client, agent=agent(key), task=task(key))
    await stack.fake.wait_for_requests(key, 1, timeout_s=30)

    worker.process.send_signal(signal.SIGTERM)
    draining = "stop requested, draining (signal again to force)"

    async def first_handled() -> bool:
        return bool(worker.events(draining))

    await until(first_handled, bool, "the first SIGTERM to be handled")
    worker.process.send_signal(signal.SIGTERM)
    exit_code = await asyncio.to_thread(worker.process.wait, 5)  # not the 30 s grace period

    assert exit_code != 0
    abandoned = worker.events("second stop request, abandoning in-flight work")
    assert [line["signal"] for line in abandoned] == ["SIGTERM"]


async def test_log_level_debug_still_keeps_keys_and_content_out_of_the_log(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await stack.start_worker("--log-level", "DEBUG")
    key = new_key()
    stack.fake.script(key, [anthropic.text("Noted.")])
    phrase = f"a private note {key}"
    client = await connect_like(worker, monkeypatch)

    handle = await turnkeeper.start_turn(client, agent=agent(key), task=task(key, phrase))
    await handle.result()

    levels = {line["level"] for line in worker.log_lines()}
    assert "debug" in levels
    log = worker.log_path.read_text()
    assert phrase not in log and "Noted." not in log
    assert worker.environment["ANTHROPIC_API_KEY"] not in log


async def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    done = await run([sys.executable, str(WORKER_SCRIPT), "--log-level", "LOUD"], cwd=tmp_path)

    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("worker.py: error: argument --log-level: invalid choice: 'LOUD'"), last


async def test_log_level_warning_leaves_a_quiet_log(
    stack: SystemStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    [port] = free_ports(1)
    env = {"TURNKEEPER_HEALTH_PORT": str(port)}
    worker = await stack.start_worker("--log-level", "WARNING", env=env, wait=False)
    await until(lambda: probe(port, "/readyz"), lambda answer: answer[0] == 200, "ready")
    key = new_key()
    stack.fake.script(key, [anthropic.text("Quiet.")])
    client = await connect_like(worker, monkeypatch)

    handle = await turnkeeper.start_turn(client, agent=agent(key), task=task(key))
    report = await handle.result()

    assert report.output == "Quiet."
    assert worker.log_lines() == []


async def test_worker_dev_runs_a_turn_on_its_own_server_and_stops_it_on_sigterm(
    stack: SystemStack,
) -> None:
    port, ui_port = free_ports(2)
    command = [
        sys.executable, str(WORKER_SCRIPT), "--dev", "--dev-port", str(port),
        "--ui-port", str(ui_port),
    ]  # fmt: skip
    worker = await stack.start_worker(script=command)
    servers = psutil.Process(worker.process.pid).children(recursive=True)
    key = new_key()
    stack.fake.script(key, [anthropic.text("Ran on the embedded server.")])

    done = await stack.turnkeeper(
        "run", "--address", f"127.0.0.1:{port}", "--task-queue", worker.task_queue,
        "--model", SONNET, "--system", f"[script:{key}]", "Say where you ran.", worker=worker,
    )  # fmt: skip
    exit_code = await asyncio.to_thread(worker.stop)

    assert "Ran on the embedded server." in done.stdout
    assert f"Temporal Web UI: http://localhost:{ui_port}" in worker.log_path.read_text()
    data = Path(worker.environment["TURNKEEPER_DATA_DIR"])
    assert (data / "temporal.sqlite").exists()
    assert exit_code == 0
    assert not port_is_open(port) and not port_is_open(ui_port)
    assert servers and not [server for server in servers if server.is_running()]
