"""pytest in forked children of one warm process.

A fresh interpreter spends seconds importing temporalio, pydantic, the provider SDKs and
hypothesis before the first test runs, for every mutant. Here one process imports them once,
after a first run has shown which modules the tests load, and each run is a fork of it: the
child imports only the project's own modules, from disk, so it sees the mutant written there.
Nothing of the project is imported in the parent, or a child would test a stale copy."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

# Modules of the checkout itself: imported fresh in every child, never in the parent.
_OWN_PACKAGES: Final = ("turnkeeper", "tests", "conftest", "__main__", "__editable__")
_OUTPUT_CHARS: Final = 4000  # the tail kept of a run's output, enough for pytest's summary
# Stop at the first failure: one is enough to kill a mutant. Plain asserts: pytest's rewriting
# of every test module (its bytecode cache is off, see below) changes the messages of failures,
# never whether a test fails, and costs a third of a short run.
_PYTEST_ARGS: Final = ("-x", "-q", "-p", "no:cacheprovider", "--assert=plain")


@dataclass(frozen=True)
class Run:
    passed: bool
    timed_out: bool
    seconds: float
    output: str


class WarmPytest:
    """Runs pytest on the checkout at `root` in forked children."""

    def __init__(self, root: Path) -> None:
        self._root = root
        # A mutant and its restored original can share an mtime and a size: never cache bytecode,
        # and never read a cached one either. Another process importing the checkout meanwhile
        # (a worker, a test run) writes __pycache__ files that can match a mutant's mtime and
        # size; a prefix of our own, always empty, makes every import compile the source.
        sys.dont_write_bytecode = True
        sys.pycache_prefix = tempfile.mkdtemp(prefix="mutation-pycache-")

    def warm_up(self, tests: list[str], timeout: float) -> Run:
        """Runs `tests` on the unmutated code, then imports here every third-party module that
        the run loaded, for the children to inherit."""
        # A file, not a pipe: thousands of names would fill a pipe that nobody reads until the
        # child has ended.
        with tempfile.TemporaryFile() as report:
            run = self._fork(tests, timeout, report_modules_to=report.fileno())
            report.seek(0)
            loaded = report.read().decode("utf-8").split()
        if run.passed:
            self._import_third_party(loaded)
        return run

    def run(self, tests: list[str], timeout: float) -> Run:
        """Runs `tests`, stopping at the first failure."""
        return self._fork(tests, timeout, report_modules_to=None)

    def _fork(self, tests: list[str], timeout: float, report_modules_to: int | None) -> Run:
        started = time.monotonic()
        with tempfile.TemporaryFile() as output:
            pid = os.fork()
            if pid == 0:
                self._child(tests, output.fileno(), report_modules_to)
            passed, timed_out = _wait(pid, timeout)
            output.seek(0)
            text = output.read().decode("utf-8", errors="replace")
        return Run(passed, timed_out, time.monotonic() - started, text[-_OUTPUT_CHARS:])

    def _child(self, tests: list[str], output: int, report_modules_to: int | None) -> None:
        code = 70  # EX_SOFTWARE, should anything below raise
        try:
            os.setsid()  # its own process group, so that a timeout ends what it started too
            os.chdir(self._root)
            os.dup2(output, 1)
            os.dup2(output, 2)
            code = int(pytest.main([*_PYTEST_ARGS, *tests]))
            if report_modules_to is not None:
                os.write(report_modules_to, " ".join(_third_party(self._root)).encode())
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # never back into the parent's code, nor its atexit handlers

    @staticmethod
    def _import_third_party(names: list[str]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in names:
                with contextlib.suppress(Exception):
                    importlib.import_module(name)
        # pytest collects garbage thoroughly as it ends; without this, each child walks every
        # object of the thousands of modules imported here (a third of a short run).
        gc.freeze()


def _third_party(root: Path) -> list[str]:
    """The modules loaded that do not belong to the checkout (the virtualenv inside it does not
    count as the checkout)."""
    names = []
    for name, module in list(sys.modules.items()):
        if name.split(".")[0].startswith(_OWN_PACKAGES):
            continue
        where = getattr(module, "__file__", None) or ""
        if where.startswith(str(root)) and not where.startswith(sys.prefix):
            continue
        names.append(name)
    return names


def _wait(pid: int, timeout: float) -> tuple[bool, bool]:
    """(passed, timed out) of the child `pid`; a child past `timeout` is killed with its group."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status) == 0, False
            if time.monotonic() > deadline:
                _kill_group(pid)
                os.waitpid(pid, 0)
                return False, True
            time.sleep(0.01)
    finally:
        _kill_group(pid)  # what the tests started and left running, or all of it on Ctrl-C


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
