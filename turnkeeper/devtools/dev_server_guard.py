"""`python -m turnkeeper.devtools.dev_server_guard GRACE_S COMMAND…`: runs the dev server as its
child and stops it once its own stdin reaches end of file, so that the server never outlives the
process that started it.

`DevServer` starts this guard with stdin the read end of a pipe whose write end only the starting
process holds. The kernel closes that end when the process ends, however it ends (SIGKILL, the
OOM killer, a crash), and `DevServer.stop` closes it on purpose: end of file means "stop", and
the path taken on a clean stop is the one taken on a kill, so it is exercised on every run.

Why not Linux's PR_SET_PDEATHSIG: it exists on Linux only (the demo runs on macOS too), it fires
when the *thread* that forked exits rather than the process, and setting it needs a
`preexec_fn`, which is unsafe in a process that already runs threads (the Temporal SDK's).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    """Runs COMMAND until it exits, or until stdin closes or a signal asks us to stop it."""
    grace_s, command = float(argv[0]), list(argv[1:])
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            # Killed on its own, the guard would leave the server behind: it stops it first.
            signal.signal(getattr(signal, name), lambda *_: _stop(server, grace_s))
    threading.Thread(target=_stop_at_end_of_input, args=(server, grace_s), daemon=True).start()
    code = server.wait()
    return code if code >= 0 else 128 - code  # killed by signal N: exit 128 + N, as a shell does


def _stop_at_end_of_input(server: subprocess.Popen[bytes], grace_s: float) -> None:
    # The file descriptor, not sys.stdin: a thread blocked in a buffered read holds a lock that
    # aborts the interpreter's shutdown. Nobody writes; the read returns when the pipe closes.
    while os.read(0, 512):
        pass
    _stop(server, grace_s)


def _stop(server: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM now, SIGKILL after the grace period; never blocks (called from a signal handler
    while the main thread waits for the server)."""
    server.terminate()
    insist = threading.Timer(grace_s, _kill_if_running, args=(server,))
    insist.daemon = True
    insist.start()


def _kill_if_running(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        # Into the server's log file, which is our stdout.
        print(f"dev server ignored SIGTERM for its grace period, killing {server.pid}", flush=True)
        server.kill()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
