"""Reading a sandbox folder's archive (a tar in memory, never extracted onto a disk): the worker
lists what a call changed with it, and `turnkeeper sandbox get` and the HTTP API take a file out
with it. Here, not in the sandbox's activities, so that the library client reads a file without
loading them."""

from __future__ import annotations

import io
import tarfile
from pathlib import PurePosixPath


def read_file(archive: bytes, path: str) -> bytes:
    """The content of the regular file at `path` in the folder's `archive`.

    Raises:
        LookupError: no regular file has that path (a folder, a link, or nothing).
    """
    wanted = folder_path(path)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        for member in tar:
            if wanted is not None and folder_path(member.name) == wanted and member.isreg():
                handle = tar.extractfile(member)
                assert handle is not None
                return handle.read()
    raise LookupError(f"the sandbox folder has no file {path!r}")


def folder_path(name: str) -> str | None:
    """A member's name as a path in the folder (`./a/b` -> `a/b`); None for the folder itself
    and for names that would leave it."""
    parts = [part for part in PurePosixPath(name).parts if part not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts:
        return None
    return "/".join(parts)
