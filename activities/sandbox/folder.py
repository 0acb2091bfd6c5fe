"""The sandbox folder as the worker handles it: a tar archive in memory, never extracted onto the
worker's disk. Only the sandbox itself (bubblewrap.py) unpacks one, inside its own tmpfs, so a
member named `../x` or a symlink to `/etc` can reach nothing of the host.

`files` lists the regular files of an archive with a digest of each, which is what a call's
`files_changed` and the report's file list are made of; `seed_archive` packs workspace files for
a turn's first call. Taking one file out is the ground's (`sandbox_archive.read_file`), which
`turnkeeper sandbox get` reads without loading the activities.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

from turnkeeper.activities.tools.registry import ToolError
from turnkeeper.activities.tools.workspace import Workspace

from turnkeeper.ground.sandbox_archive import folder_path


def empty_archive() -> bytes:
    buffer = io.BytesIO()
    tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT).close()
    return buffer.getvalue()


def files(archive: bytes) -> dict[str, str]:
    """Each regular file of `archive` by its path in the folder, with the SHA-256 of its bytes."""
    found: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        for member in tar:
            path = folder_path(member.name)
            if path is None or not member.isreg():
                continue
            handle = tar.extractfile(member)
            assert handle is not None  # a regular member always has content
            found[path] = hashlib.file_digest(handle, "sha256").hexdigest()
    return found


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The paths a call created, modified or deleted, sorted."""
    return sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )


def seed_archive(workspace: Workspace, paths: list[str], max_bytes: int) -> bytes:
    """The workspace's `paths` (files, or folders taken whole) as an archive at the same
    relative paths. Symbolic links inside are left out rather than followed.

    Raises:
        ToolError: a path leads outside the workspace, does not exist, or the files come to
            more than `max_bytes` (the sandbox folder's size).
    """
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for given in paths:
            root = workspace.resolve(given)  # refuses paths and links that leave the workspace
            if not root.exists():
                raise ToolError(
                    f"agent.sandbox.files names {given!r}, which is not in the workspace"
                )
            for source in _regular_files(root):
                data = _read_no_follow(source)
                total += len(data)
                if total > max_bytes:
                    raise ToolError(
                        f"agent.sandbox.files come to more than the sandbox folder's "
                        f"{max_bytes // (1024 * 1024)} MiB"
                    )
                info = tarfile.TarInfo(source.relative_to(workspace.root).as_posix())
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _regular_files(root: Path) -> list[Path]:
    if root.is_file() and not root.is_symlink():
        return [root]
    found = []
    for folder, _, names in os.walk(root, followlinks=False):
        found += [Path(folder, name) for name in sorted(names)]
    return [path for path in found if stat.S_ISREG(path.lstat().st_mode)]


def _read_no_follow(path: Path) -> bytes:
    # O_NOFOLLOW: a file swapped for a link after the walk is refused, not followed out.
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read()
