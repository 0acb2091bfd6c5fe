"""The `write_preview` activity on a real workspace folder: the diff a write_file call would
make, a new file, and what it refuses to diff (a path outside, a binary or oversized file), each
as a `problem` rather than a failure; and a long diff cut at `MAX_PREVIEW_CHARS`."""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.activities.tools.write_preview import MAX_DIFFED_BYTES, WritePreviews
from turnkeeper.contracts.write_preview import MAX_PREVIEW_CHARS, WritePreview, WritePreviewInput


async def preview(root: Path, path: str, content: str) -> WritePreview:
    activity = WritePreviews(Workspace(root)).write_preview
    return await ActivityEnvironment().run(activity, WritePreviewInput(path=path, content=content))


async def test_the_diff_is_against_the_file_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("one\ntwo\nthree\n")
    shown = await preview(tmp_path, "notes.md", "one\n2\nthree\nfour\n")
    assert shown.exists and shown.problem is None and not shown.truncated
    lines = shown.diff.splitlines()
    assert lines[:2] == ["--- notes.md (now)", "+++ notes.md (after the write)"]
    assert lines[3:] == [" one", "-two", "+2", " three", "+four"]
    assert (tmp_path / "notes.md").read_text() == "one\ntwo\nthree\n"  # only read


async def test_a_new_file_adds_every_line(tmp_path: Path) -> None:
    shown = await preview(tmp_path, "new/a.md", "hello\nworld")
    assert not shown.exists and shown.diff.splitlines()[0] == "--- /dev/null"
    assert shown.diff.splitlines()[-2:] == ["+hello", "+world"]
    assert not (tmp_path / "new").exists()


async def test_an_unchanged_file_has_an_empty_diff(tmp_path: Path) -> None:
    (tmp_path / "same.md").write_text("same\n")
    shown = await preview(tmp_path, "same.md", "same\n")
    assert shown.exists and shown.diff == "" and shown.problem is None


async def test_what_cannot_be_diffed_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    (tmp_path / "secret.md").write_text("outside")
    (root / "image.bin").write_bytes(b"\x89PNG\0\0")
    with (root / "big.log").open("wb") as big:
        big.truncate(MAX_DIFFED_BYTES + 1)
    outside = await preview(root, "../secret.md", "x")
    assert outside.problem is not None and "outside the workspace" in outside.problem
    assert outside.diff == "" and "outside" not in outside.diff
    binary = await preview(root, "image.bin", "x")
    assert binary.problem is not None and "binary" in binary.problem
    big = await preview(root, "big.log", "x")
    assert big.exists and big.problem is not None and str(MAX_DIFFED_BYTES) in big.problem


async def test_a_long_diff_is_cut(tmp_path: Path) -> None:
    content = "".join(f"line {i}: {os.urandom(8).hex()}\n" for i in range(3000))
    shown = await preview(tmp_path, "long.md", content)
    assert shown.truncated and len(shown.diff) == MAX_PREVIEW_CHARS
