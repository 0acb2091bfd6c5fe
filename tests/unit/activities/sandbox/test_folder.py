"""The sandbox folder as the worker handles it: archives read in memory, never unpacked onto
the worker's disk, and workspace seeds that cannot leave the workspace."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from turnkeeper.activities.sandbox import folder
from turnkeeper.activities.tools.registry import ToolError
from turnkeeper.activities.tools.workspace import Workspace

from turnkeeper.ground import sandbox_archive


def _archive(*members: tarfile.TarInfo, data: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member in members:
            content = (data or {}).get(member.name, b"")
            member.size = len(content) if member.isreg() else 0
            tar.addfile(member, io.BytesIO(content) if member.isreg() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_only_regular_files_inside_the_folder_count_and_can_be_read() -> None:
    archive = _archive(
        _member("."),
        _member("./a.txt"),
        _member("../escape.txt"),
        _member("/etc/passwd"),
        _member("./link", tarfile.SYMTYPE, "/etc/passwd"),
        _member("./sub", tarfile.DIRTYPE),
        data={"./a.txt": b"A", "../escape.txt": b"E", "/etc/passwd": b"P"},
    )
    assert list(folder.files(archive)) == ["a.txt"]
    assert sandbox_archive.read_file(archive, "a.txt") == b"A"
    for refused in ("../escape.txt", "/etc/passwd", "link", "sub", "missing"):
        with pytest.raises(LookupError):
            sandbox_archive.read_file(archive, refused)


def test_changed_names_created_modified_and_deleted_files() -> None:
    before = {"same": "1", "edited": "2", "gone": "3"}
    after = {"same": "1", "edited": "9", "new": "4"}
    assert folder.changed(before, after) == ["edited", "gone", "new"]
    assert folder.files(folder.empty_archive()) == {}


def test_seeds_stay_in_the_workspace_and_links_are_left_out(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "workspace")
    (workspace.root / "data").mkdir()
    (workspace.root / "data" / "in.csv").write_text("a,b\n")
    (tmp_path / "secret").write_text("host")
    os.symlink(tmp_path / "secret", workspace.root / "data" / "leak")
    archive = folder.seed_archive(workspace, ["data"], max_bytes=1024)
    assert folder.files(archive).keys() == {"data/in.csv"}
    with pytest.raises(ToolError, match="leads outside the workspace"):
        folder.seed_archive(workspace, ["../secret"], max_bytes=1024)
    with pytest.raises(ToolError, match="not in the workspace"):
        folder.seed_archive(workspace, ["nothing"], max_bytes=1024)
    with pytest.raises(ToolError, match="more than the sandbox folder"):
        folder.seed_archive(workspace, ["data"], max_bytes=2)
