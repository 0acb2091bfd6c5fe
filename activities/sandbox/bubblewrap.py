"""One sandboxed run under bubblewrap: the command line, the limits, and the run itself.

The sandbox sees the operator's read-only system image, a private /proc, a read-only /dev, a
size-limited /tmp, and the sandbox folder at /sandbox; nothing else of the host, and nothing
else it can write. Every namespace is new (no network unless
asked and allowed, its own PID space, so that its processes die with it), the environment is
empty but for PATH, HOME and LANG, and `--die-with-parent` ends it with the worker.

The folder is a size-limited tmpfs, not a host folder: a call that fills it gets ENOSPC and
the host's disk is never touched. A short shell prelude inside fills it from the archive of the
turn's previous call (on stdin), runs the code under `timeout`, and writes the folder back as a
tar archive to a file descriptor the worker holds; the worker never extracts an archive onto
its own disk (folder.py reads archives in memory), so a planted symlink means nothing to it.

Limits are rlimits set between fork and exec of bwrap, inherited by everything inside: CPU
seconds, address space, file size, and, where the worker runs as root, processes (counted per
user id: as root each call runs under a user id of its own, so one call's fork bomb never starves
another's; as another user the limit counts that user's processes, so it is left unset).
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from turnkeeper.activities.sandbox.limits import SandboxLimits
from turnkeeper.contracts.sandbox import SandboxSpec

FOLDER: Final = "/sandbox"
# Seconds after `timeout_s` for the prelude to save the folder before the worker kills it all.
SAVE_GRACE_S: Final = 10.0
# bwrap, its reaper, the prelude, `timeout` and tar run inside the processes limit too.
_HELPERS: Final = 5
_READ_CHUNK: Final = 64 * 1024
# Written for dash and busybox sh: $1 is the timeout, $2 the archive's file, the rest the command.
_PRELUDE: Final = (
    "tar -x -f - -C /sandbox ||"
    ' { echo "sandbox: the folder could not be restored" >&2; exit 125; }\n'
    't="$1"; out="$2"; shift 2\n'
    'timeout -k 2 "$t" "$@" </dev/null\n'
    "rc=$?\n"
    'tar -c -f "$out" -C /sandbox . || exit 126\n'
    'exit "$rc"\n'
)

OutputSink = Callable[[str, bytes], None]


@dataclass(frozen=True)
class RunOutcome:
    """What one run left: its exit code, its output (cut), and the folder's archive."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int
    timed_out: bool
    archive: bytes | None
    """The folder after the run; None when it could not be saved (the run was killed)."""


def command_line(
    limits: SandboxLimits, spec: SandboxSpec, bwrap: str, archive_fd: int, command: list[str]
) -> list[str]:
    """bwrap's argv for `command`, run in /sandbox with the archive written to `archive_fd`."""
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    if spec.network:
        argv.append("--share-net")
    argv += ["--hostname", "sandbox"]
    for name, value in _ENVIRONMENT.items():
        argv += ["--setenv", name, value]
    for path in limits.image:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            argv += ["--ro-bind", path, path]
    disk = str(limits.disk_mb * 1024 * 1024)
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", disk, "--tmpfs", "/tmp"]
    argv += ["--size", disk, "--tmpfs", FOLDER, "--chdir", FOLDER]
    # bwrap's root and /dev are tmpfs without a size: writable, they would let a call fill the
    # host's memory. Only /sandbox and /tmp, both sized, stay writable.
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
    timeout = f"{spec.timeout_s:g}"
    return [*argv, "sh", "-c", _PRELUDE, "sh", timeout, f"/dev/fd/{archive_fd}", *command]


_ENVIRONMENT: Final = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": FOLDER,
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}


async def run(
    limits: SandboxLimits,
    spec: SandboxSpec,
    bwrap: str,
    command: list[str],
    seed: bytes,
    on_output: OutputSink | None = None,
) -> RunOutcome:
    """Runs `command` in a fresh sandbox whose folder starts as the tar archive `seed`.

    `on_output(stream, chunk)` sees the output as it comes ("stdout" or "stderr"), uncut.
    """
    with tempfile.TemporaryDirectory(prefix="turnkeeper-sandbox-") as scratch:
        stdin, archive = await asyncio.to_thread(_scratch_files, Path(scratch), seed)
        try:
            argv = command_line(limits, spec, bwrap, archive.fileno(), command)
            started = time.monotonic()
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(archive.fileno(),),
                env={},
                preexec_fn=_limiter(limits, spec),
            )
            outcome = await _collect(process, limits, spec, on_output)
            elapsed = time.monotonic() - started
        finally:
            stdin.close()
            archive.close()
        archive_path = Path(archive.name)
        exit_code, killed, stdout, stderr = outcome
        timed_out = killed or (exit_code in (124, 137) and elapsed >= spec.timeout_s)
        saved = None
        if not killed and exit_code not in (125, 126):
            saved = await asyncio.to_thread(_read_archive, archive_path, limits)
        return RunOutcome(
            exit_code=exit_code,
            stdout=bytes(stdout.kept),
            stderr=bytes(stderr.kept),
            stdout_total=stdout.total,
            stderr_total=stderr.total,
            timed_out=timed_out,
            archive=saved,
        )


def _scratch_files(scratch: Path, seed: bytes) -> tuple[BinaryIO, BinaryIO]:
    """The seed to read from (the prelude's stdin) and the file the archive goes to."""
    seed_path = scratch / "seed.tar"
    seed_path.write_bytes(seed)
    archive_path = scratch / "folder.tar"
    archive_path.touch()
    # The prelude reopens it through /dev/fd as the call's own user id; the folder around it is
    # the worker's alone (0700), so no other user reaches it by name.
    archive_path.chmod(0o666)
    return seed_path.open("rb"), archive_path.open("r+b")


class _Capture:
    """The first `limit` bytes of a stream, and how many there were in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        self.total += len(chunk)


async def _collect(
    process: asyncio.subprocess.Process,
    limits: SandboxLimits,
    spec: SandboxSpec,
    on_output: OutputSink | None,
) -> tuple[int, bool, _Capture, _Capture]:
    stdout, stderr = _Capture(limits.max_output_bytes), _Capture(limits.max_output_bytes)
    assert process.stdout is not None and process.stderr is not None
    readers = asyncio.gather(
        _drain(process.stdout, stdout, "stdout", on_output),
        _drain(process.stderr, stderr, "stderr", on_output),
        process.wait(),
    )
    killed = False
    try:
        await asyncio.wait_for(asyncio.shield(readers), timeout=spec.timeout_s + SAVE_GRACE_S)
    except TimeoutError:
        killed = True
        process.kill()  # bwrap's death kills its sandbox (`--die-with-parent`)
        await readers
    except BaseException:  # cancelled: nothing may outlive the activity
        process.kill()
        await asyncio.shield(readers)
        raise
    return (process.returncode if process.returncode is not None else -9), killed, stdout, stderr


async def _drain(
    stream: asyncio.StreamReader, capture: _Capture, name: str, on_output: OutputSink | None
) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        capture.add(chunk)
        if on_output is not None:
            on_output(name, chunk)


def _read_archive(path: Path, limits: SandboxLimits) -> bytes | None:
    # RLIMIT_FSIZE bounds the file; an archive larger than the folder can hold was not tar's.
    if path.stat().st_size > _file_size_limit(limits):
        return None
    return path.read_bytes()


def _file_size_limit(limits: SandboxLimits) -> int:
    # A tar of a full folder is the folder plus a header per file: a quarter more is room enough.
    return limits.disk_mb * 1024 * 1024 * 5 // 4 + 1024 * 1024


def _limiter(limits: SandboxLimits, spec: SandboxSpec) -> Callable[[], None]:
    """The function run between fork and exec: rlimits, and as root a user id of the call's own."""
    cpu = math.ceil(spec.timeout_s)
    memory = spec.memory_mb * 1024 * 1024
    size = _file_size_limit(limits)
    uid = limits.first_uid + secrets.randbelow(limits.uid_count) if os.geteuid() == 0 else None

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:
            processes = limits.max_processes + _HELPERS
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

    return limit
