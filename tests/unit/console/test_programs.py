"""How a program is written in a command printed for the user: as PATH finds it, else as a path
that works from the current folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnkeeper.console.programs import spelled


@pytest.fixture
def program(tmp_path: Path) -> Path:
    script = tmp_path / "venv" / "bin" / "turnkeeper"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_a_program_on_path_keeps_its_name(program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(program.parent))
    assert spelled(program) == "turnkeeper"


def test_another_program_of_that_name_on_path_does_not_count(
    program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "elsewhere" / "turnkeeper"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setenv("PATH", str(other.parent))
    monkeypatch.chdir(tmp_path)
    assert spelled(program) == "venv/bin/turnkeeper"


def test_a_program_below_the_current_folder_is_written_relative(
    program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.chdir(program.parent)
    assert spelled(program) == "./turnkeeper"  # a bare name would be looked up on PATH


def test_a_program_elsewhere_is_written_absolute(
    program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    assert spelled(program) == str(program)
