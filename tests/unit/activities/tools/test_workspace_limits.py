"""The built-in workspace tools at their limits: the caps of a listing, a read and a search, the
counts their answers give, the paths they name, and what they answer when a path cannot be
resolved or a folder is swapped for a symbolic link after it was checked."""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from turnkeeper.activities.tools.registry import ToolRegistry
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools

from tests.unit.activities.tools.tool_calls import SECRET, call, names_in, refused


async def test_a_listing_shows_1000_entries_and_counts_the_rest(
    tools: ToolRegistry, root: Path
) -> None:
    for index in range(1000):
        (root / f"f{index:05}").touch()
    listing = (await call(tools, "list_files")).splitlines()
    assert len(listing) == 1000 and listing[-1] == "f00999"

    for index in range(1000, 2003):
        (root / f"f{index:05}").touch()
    listing = (await call(tools, "list_files")).splitlines()

    assert listing[:-1] == [f"f{index:05}" for index in range(1000)]
    assert listing[-1] == "[1003 more entries not shown; list a subfolder]"


async def test_a_listing_counts_the_names_it_cannot_show(tools: ToolRegistry, root: Path) -> None:
    (root / "notes").mkdir()
    for name in ("a.md", "z.md", "x\ny.md", "b.md\u2028c.md"):
        (root / "notes" / name).write_text("x")

    assert await call(tools, "list_files", path="notes") == (
        "notes/a.md\nnotes/z.md\n[2 entries whose names hold control characters not shown]"
    )


@pytest.mark.parametrize("cap", [64, 65])
async def test_a_file_of_exactly_the_cap_is_read_whole_and_one_byte_more_is_cut(
    root: Path, cap: int
) -> None:
    tools = builtin_tools(Workspace(root), max_read_bytes=cap)
    (root / "fits.md").write_text("x" * cap)
    (root / "over.md").write_text("y" * (cap + 1))

    assert await call(tools, "read_file", path="fits.md") == "x" * cap
    assert await call(tools, "read_file", path="over.md") == (
        "y" * cap + f"\n[truncated: showing the first {cap} of {cap + 1} bytes of 'over.md']"
    )


def test_read_file_shows_256_kib_of_a_file_unless_told_otherwise(root: Path) -> None:
    read_file = builtin_tools(Workspace(root)).get("read_file")
    assert read_file is not None
    assert "A file over 262144 bytes is cut off" in read_file.description


@pytest.mark.parametrize("tool", ["list_files", "read_file", "write_file"])
async def test_a_missing_folder_is_named_down_to_the_first_part_that_is_missing(
    tools: ToolRegistry, root: Path, tool: str
) -> None:
    (root / "notes").mkdir()
    arguments = {"path": "notes/drafts/old/a.md"}
    if tool == "write_file":
        (root / "notes" / "drafts").write_text("a file where a folder is expected")
        arguments["content"] = "x"
        expected = "'notes/drafts' is a file, not a folder"
    else:
        expected = "folder 'notes/drafts' does not exist"

    assert await refused(tools, tool, **arguments) == expected


async def test_a_search_stops_at_its_last_match_and_opens_no_further_file(
    tools: ToolRegistry, root: Path
) -> None:
    (root / "many.txt").write_text("hit\n" * 500)
    (root / "z.bin").write_bytes(b"hit\0")  # would be counted as skipped, were it opened

    found = (await call(tools, "search_files", pattern="hit")).splitlines()

    assert found[:-1] == [f"many.txt:{number}: hit" for number in range(1, 201)]
    assert found[-1] == "[stopped after 200 matches; narrow the pattern or the path]"


@pytest.mark.parametrize("path", [".", "a", "a/b", "a/b/c", "a/b/c/d.md"])
async def test_a_match_names_its_file_from_the_workspace_root(
    tools: ToolRegistry, root: Path, path: str
) -> None:
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "d.md").write_text("first\nhit\n")

    assert await call(tools, "search_files", pattern="hit", path=path) == "a/b/c/d.md:2: hit"


async def test_a_path_that_cannot_be_resolved_is_refused_without_the_host_path(
    tools: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host_path = str(root / "notes")

    def unreadable(self: Path, strict: bool = False) -> Path:
        raise PermissionError(errno.EACCES, "Permission denied", host_path)

    monkeypatch.setattr(Path, "resolve", unreadable)
    message = await refused(tools, "read_file", path="notes/a.md")

    assert message == "cannot resolve 'notes/a.md': Permission denied"


def test_a_folder_swapped_for_a_symlink_after_the_check_is_not_searched(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = Workspace(root)
    (root / "sub").mkdir()
    checked = workspace.resolve("sub")
    # The race: `sub` was a folder when checked and is a symlink to the outside when searched.
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    monkeypatch.setattr(workspace, "resolve", lambda path: checked)

    assert workspace.search("secret", "sub") == (
        "no matches for 'secret' in 'sub' (0 files searched)\n"
        "[1 binary, oversized or unreadable files skipped]"
    )


def _failing_open(name: str, error: OSError) -> Callable[..., int]:
    """os.open that fails with `error` for `name`: a failure the file system gives only
    elsewhere (NFS, a quota, permissions, which root does not meet)."""
    real_open = os.open

    def opener(path: Any, *args: Any, **kwargs: Any) -> int:
        if path == name:
            raise error
        return real_open(path, *args, **kwargs)

    return opener


@pytest.mark.parametrize(
    ("code", "text"), [(errno.EACCES, "Permission denied"), (errno.ESTALE, "Stale file handle")]
)
async def test_a_file_or_folder_that_cannot_be_opened_is_refused_with_the_reason(
    tools: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch, code: int, text: str
) -> None:
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("x")

    monkeypatch.setattr(os, "open", _failing_open("a.md", OSError(code, text)))
    assert await refused(tools, "read_file", path="notes/a.md") == f"'notes/a.md': {text}"
    monkeypatch.setattr(os, "open", _failing_open("notes", OSError(code, text)))
    assert await refused(tools, "list_files", path="notes") == f"'notes': {text}"


def test_a_new_file_is_readable_by_all_and_executable_by_none(root: Path) -> None:
    workspace = Workspace(root)
    before = os.umask(0o022)
    try:
        workspace.write_text("new.md", "x")
    finally:
        os.umask(before)
    assert (root / "new.md").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("planted", ["a file", "a symlink to the outside"])
def test_a_write_never_goes_through_a_temporary_file_planted_in_advance(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    workspace = Workspace(root)
    monkeypatch.setattr(secrets, "token_hex", lambda size: "0" * 16)
    temporary = root / ".turnkeeper-0000000000000000.tmp"
    if planted == "a file":
        temporary.write_text("planted, and longer than the content")
    else:
        temporary.symlink_to(outside / "secret.txt")

    with pytest.raises(OSError):
        workspace.write_text("summary.md", "new")

    assert names_in(root) == [temporary.name]
    assert names_in(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


def test_a_failed_write_leaves_no_temporary_file_behind(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = Workspace(root)
    (root / "summary.md").write_text("old")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        workspace.write_text("summary.md", "new")

    assert names_in(root) == ["summary.md"]
    assert (root / "summary.md").read_text() == "old"


def test_a_file_swapped_for_a_symlink_to_a_folder_is_replaced_not_followed(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = Workspace(root)
    (root / "plain.txt").write_text("plain")
    checked = workspace.resolve("plain.txt")
    (root / "plain.txt").unlink()
    (root / "plain.txt").symlink_to(outside)
    monkeypatch.setattr(workspace, "resolve", lambda path: checked)

    assert workspace.write_text("plain.txt", "replaced") == "wrote 8 bytes to 'plain.txt'"

    assert not (root / "plain.txt").is_symlink()
    assert (root / "plain.txt").read_text() == "replaced"
    assert names_in(outside) == ["secret.txt"]
