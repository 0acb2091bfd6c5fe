"""The sandbox of `run_python` and `run_shell` as an attacker meets it: real bubblewrap processes
run through the `sandbox_call` activity, with small limits so that each attack ends in a second
or two. Each attack must be contained (the host's files, network, environment and disk out of
reach), reported in the call's result, and leave the worker and the other turns' calls working.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.sandbox import folder
from turnkeeper.activities.sandbox.limits import SandboxLimits
from turnkeeper.activities.sandbox.sandbox_activity import SandboxActivities
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.contracts.sandbox import SandboxSpec
from turnkeeper.contracts.sandbox_io import SandboxCallInput, SandboxCallResult

from turnkeeper.ground import sandbox_archive
from turnkeeper.payloads.content_store import LocalFolderStore

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

LIMITS = SandboxLimits(disk_mb=8, max_processes=16, max_output_bytes=4096)
SPEC = SandboxSpec(timeout_s=2, memory_mb=128)
PYTHON_ENV = ("PYTHONDONTWRITEBYTECODE",)


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.store = LocalFolderStore(root / "store")
        self.workspace = Workspace(root / "workspace")
        self.activities = SandboxActivities(LIMITS, self.store, self.workspace)

    async def call(
        self, tool: str, source: str, state_ref: str | None = None, spec: SandboxSpec = SPEC
    ) -> tuple[dict[str, Any], SandboxCallResult]:
        key = "code" if tool == "run_python" else "command"
        call = SandboxCallInput(
            turn_id="turn-1",
            call_id=f"call-{abs(hash(source))}",
            tool=tool,
            input={key: source},
            spec=spec,
            state_ref=state_ref,
        )
        result = await ActivityEnvironment().run(self.activities.sandbox_call, call)
        assert not result.is_error, result.content
        return json.loads(result.content), result


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


async def test_the_host_is_out_of_reach(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-of-the-worker")
    (tmp_path / "host-secret.txt").write_text("the host's own")
    hits: list[bool] = []
    server = await asyncio.start_server(lambda r, w: hits.append(True), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = f"""
import os, socket, json
found = {{}}
for path in ["/etc/passwd", "/etc/shadow", "/root", "/home", {str(tmp_path)!r}, "/work"]:
    found[path] = os.path.exists(path)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=1)
    found["socket"] = "connected"
except OSError as err:
    found["socket"] = type(err).__name__
found["environ"] = dict(os.environ)
found["pid1_environ"] = open("/proc/1/environ", "rb").read().decode()
found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
for target in ["/usr/evil", "/etc/evil", "/evil"]:
    try:
        open(target, "w").write("x")
        found[target] = "written"
    except OSError as err:
        found[target] = type(err).__name__
print(json.dumps(found))
"""
    async with server:
        result, _ = await sandbox.call("run_python", probe)
    seen = json.loads(result["stdout"])
    assert not any(seen[path] for path in ["/etc/passwd", "/etc/shadow", "/root", "/home"])
    assert not seen[str(tmp_path)] and not seen["/work"]
    assert seen["socket"] != "connected" and hits == []
    assert "sk-ant" not in result["stdout"]
    assert set(seen["environ"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "PWD", *PYTHON_ENV}
    assert max(seen["pids"]) < 50  # its own PID space: the worker's processes are not there
    assert all(seen[target] != "written" for target in ["/usr/evil", "/etc/evil", "/evil"])
    assert not Path("/usr/evil").exists()


async def test_bombs_loops_and_floods_are_cut_off_and_other_calls_go_on(sandbox: Sandbox) -> None:
    fork_bomb = sandbox.call("run_shell", "bomb() { bomb | bomb & }; bomb; sleep 5")
    memory_bomb = sandbox.call("run_python", "chunks = []\nwhile True: chunks.append(b'x' * 2**24)")
    endless = sandbox.call("run_python", "while True: pass")
    flood = sandbox.call("run_shell", "yes 0123456789 | head -c 1000000")
    disk = sandbox.call("run_shell", "dd if=/dev/zero of=big bs=1M count=100; echo dd=$?")
    meanwhile = sandbox.call("run_python", "print(sum(range(10)))")
    started = asyncio.get_running_loop().time()
    results = await asyncio.gather(fork_bomb, memory_bomb, endless, flood, disk, meanwhile)
    elapsed = asyncio.get_running_loop().time() - started
    (bombed, _), (hoarded, _), (looped, _), (flooded, _), (filled, state), (calm, _) = results

    assert bombed["timed_out"] or "fork" in bombed["stderr"].lower()
    assert hoarded["exit_code"] != 0 and "MemoryError" in hoarded["stderr"]
    assert looped["timed_out"] and looped["exit_code"] != 0
    assert flooded["stdout"].endswith("[stdout cut: showing the first 4096 of 1000000 bytes]")
    assert "No space left on device" in filled["stderr"] and "dd=1" in filled["stdout"]
    assert state.state is not None and filled["files_changed"] == ["big"]
    big = sandbox_archive.read_file(await sandbox.store.get(state.state.ref), "big")
    assert len(big) <= LIMITS.disk_mb * 1024 * 1024
    assert (calm["exit_code"], calm["stdout"]) == (0, "45\n")
    assert elapsed < SPEC.timeout_s + 8  # every call ended near its time limit
    after, _ = await sandbox.call("run_shell", "echo still here")
    assert after["stdout"] == "still here\n"


async def test_a_planted_symlink_leads_nowhere_on_the_host(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("the host's own")
    (sandbox.workspace.root / "notes.txt").write_text("seeded")
    os.symlink(secret, sandbox.workspace.root / "leak")
    spec = SPEC.model_copy(update={"files": ["."]})
    planted, first = await sandbox.call(
        "run_shell", f"ls; ln -s {secret} link; ln -s /proc/self/root/etc root; echo ok", spec=spec
    )
    assert planted["stdout"] == "notes.txt\nok\n"  # the workspace's link was not copied in
    assert first.state is not None
    followed, _ = await sandbox.call("run_shell", "cat link; ls root", first.state.ref)
    assert "the host's own" not in followed["stdout"] and "link: No such file" in followed["stderr"]
    assert followed["stdout"].split() == ["alternatives", "ld.so.cache"]  # the sandbox's own /etc
    archive = await sandbox.store.get(first.state.ref)
    with pytest.raises(LookupError):
        sandbox_archive.read_file(archive, "link")
    assert sandbox_archive.read_file(archive, "notes.txt") == b"seeded"
    assert folder.files(archive).keys() == {"notes.txt"}
