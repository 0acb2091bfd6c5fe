"""The contract's built-in worker tools (list_files, read_file, search_files, write_file),
sandboxed to one workspace directory.

Two layers keep every read and write inside the workspace. `Workspace.resolve` follows a path,
symlinks included, to its real location and refuses anything outside the real root. Each file
operation then walks that real path again from a descriptor of the root, one component at a time
with O_NOFOLLOW, so a folder swapped for a symlink between the check and the use makes the
operation fail rather than escape. This relies on the POSIX `*at` calls (Linux, macOS).
A file with more than one hard link is neither read nor written: its other name may be outside.
`search_files` matches with RE2 (`line_search.py` says why).
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import os
import secrets
import stat
import unicodedata
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Annotated, BinaryIO

from pydantic import Field
from turnkeeper.activities.tools.line_search import PATTERN_SYNTAX, LineSearch
from turnkeeper.activities.tools.registry import ToolError, ToolRegistry, worker_tool
from turnkeeper.contracts.attachments import DEFAULT_MAX_BYTES, Image, sniff_media_type
from turnkeeper.contracts.tools import DEFAULT_MAX_WRITE_BYTES

MAX_LIST_ENTRIES = 1000
# Enough of a file's start to tell an image or a PDF by its bytes (WebP needs 12).
_SNIFF_BYTES = 16

# C0 and C1 controls and DEL (Cc), the line and paragraph separators (Zl, Zp) and lone surrogates
# (Cs: a name whose bytes are not UTF-8): any of them in a name could forge lines in the
# one-path-per-line answers of list_files and search_files, or cannot be encoded at all.
_UNSHOWABLE_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
# O_NONBLOCK so that opening a FIFO planted in the workspace cannot hang the tool.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK

FilePath = Annotated[
    str, Field(description="A file path relative to the workspace root, e.g. 'notes/todo.md'.")
]
DirPath = Annotated[
    str, Field(description="A path relative to the workspace root; '.' is the root itself.")
]


class Workspace:
    """A directory the built-in tools may read and write; nothing outside it is ever touched."""

    def __init__(self, root: Path, *, kind: str = "workspace") -> None:
        """`kind` names the folder in the model's error messages (a skill's folder reuses this
        confinement: `activities/skills/skill_tools.py`)."""
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve(strict=True)
        self.kind = kind

    def resolve(self, path: str) -> Path:
        """The real location of `path` (relative to the root), refused if it lies outside."""
        if "\0" in path:
            raise ToolError("a path cannot contain NUL characters")
        if (found := _unshowable(path)) is not None:
            raise ToolError(f"a path cannot contain control characters; this one holds {found!r}")
        try:
            real = (self.root / path).resolve()
        except RuntimeError:  # pathlib's report of a symlink loop
            raise ToolError(f"'{path}' is a loop of symbolic links") from None
        except OSError as err:  # the message would show the host's absolute path to the model
            raise ToolError(f"cannot resolve '{path}': {err.strerror}") from None
        if not real.is_relative_to(self.root):
            lexical = Path(os.path.normpath(self.root / path))
            how = " through a symbolic link" if lexical.is_relative_to(self.root) else ""
            raise ToolError(
                f"'{path}' leads outside the {self.kind}{how}; "
                f"use a path relative to the {self.kind} root"
            )
        return real

    def list_dir(self, path: str) -> str:
        parts = self._parts(path)
        directory = self._open_dir(parts)
        try:
            with os.scandir(directory) as entries:
                names = sorted(
                    entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "")
                    for entry in entries
                )
        finally:
            os.close(directory)
        shown = [name for name in names if _unshowable(name) is None]
        hidden = len(names) - len(shown)
        if not names:
            return f"'{_shown(parts)}' is empty"
        prefix = "".join(f"{part}/" for part in parts)
        lines = [prefix + name for name in shown[:MAX_LIST_ENTRIES]]
        if len(shown) > MAX_LIST_ENTRIES:
            lines.append(
                f"[{len(shown) - MAX_LIST_ENTRIES} more entries not shown; list a subfolder]"
            )
        if hidden:
            lines.append(f"[{hidden} entries whose names hold control characters not shown]")
        return "\n".join(lines)

    def read_file(self, path: str, max_bytes: int, max_image_bytes: int) -> str | Image:
        """A text file's text (as `read_text`), or an image or PDF whole, for the model to see.

        Raises:
            ToolError: The image is over `max_image_bytes` (the message gives both sizes).
        """
        parts = self._parts(path)
        with os.fdopen(self._open_file(parts), "rb") as handle:
            media_type = sniff_media_type(handle.read(_SNIFF_BYTES))
            if media_type is None:
                handle.seek(0)
                return self._text_of(handle, parts, max_bytes)
            size = os.fstat(handle.fileno()).st_size
            if size > max_image_bytes:
                raise ToolError(
                    f"'{_shown(parts)}' is {media_type} of {size} bytes, over the "
                    f"{max_image_bytes}-byte limit of one attachment"
                )
            handle.seek(0)
            return Image(handle.read(max_image_bytes + 1), media_type, name=parts[-1])

    def read_text(self, path: str, max_bytes: int) -> str:
        parts = self._parts(path)
        with os.fdopen(self._open_file(parts), "rb") as handle:
            return self._text_of(handle, parts, max_bytes)

    def _text_of(self, handle: BinaryIO, parts: tuple[str, ...], max_bytes: int) -> str:
        data = handle.read(max_bytes + 1)
        size = os.fstat(handle.fileno()).st_size
        truncated = len(data) > max_bytes
        text = _decode(data[:max_bytes], _shown(parts), final=not truncated)
        if truncated:
            text += (
                f"\n[truncated: showing the first {max_bytes} of {max(size, len(data))} bytes "
                f"of '{_shown(parts)}']"
            )
        return text

    def search(self, pattern: str, path: str) -> str:
        search = LineSearch(pattern)
        parts = self._parts(path)
        # closing(): stopping early must still release the folder descriptors at once.
        with closing(self._files_under(parts)) as files:
            for shown, directory, name in files:
                if _unshowable(shown) is not None:
                    search.pass_over_hidden()
                else:
                    search.search_file(_open_quietly(directory, name), shown)
                if search.full:
                    break
        return search.report(_shown(parts))

    def write_text(self, path: str, content: str, max_bytes: int = DEFAULT_MAX_WRITE_BYTES) -> str:
        data = _encoded(content, max_bytes)
        parts = self._parts(path)
        if not parts:
            raise ToolError("'.' is the workspace root, not a file; give a file path")
        directory = self._open_dir(parts[:-1], create=True)
        try:
            _replace_file(directory, parts[-1], data, _shown(parts))
        finally:
            os.close(directory)
        return f"wrote {len(data)} bytes to '{_shown(parts)}'"

    def _parts(self, path: str) -> tuple[str, ...]:
        return self.resolve(path).relative_to(self.root).parts

    def _open_dir(self, parts: tuple[str, ...], *, create: bool = False) -> int:
        """A descriptor of root/parts, walked without following any symlink."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        for depth, part in enumerate(parts, 1):
            try:
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                raise _dir_error(err, _shown(parts[:depth]), _is_symlink(part, fd)) from None
            finally:
                os.close(fd)
            fd = child
        return fd

    def _open_file(self, parts: tuple[str, ...]) -> int:
        if not parts:
            raise ToolError("'.' is a directory; list it with list_files")
        directory = self._open_dir(parts[:-1])
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=directory)
        except OSError as err:
            raise _file_error(err, _shown(parts)) from None
        finally:
            os.close(directory)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            is_dir = stat.S_ISDIR(info.st_mode)
            kind = "a directory; list it with list_files" if is_dir else "not a file"
            raise ToolError(f"'{_shown(parts)}' is {kind}")
        # On the descriptor, so the file checked is the file read, whatever its name is by now.
        if info.st_nlink > 1:
            os.close(fd)
            raise _hard_link_error(_shown(parts), info.st_nlink)
        return fd

    def _files_under(self, parts: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
        """(shown path, folder descriptor, name) of each file at or under root/parts, sorted."""
        parent = self._open_dir(parts[:-1])
        try:
            top = parts[-1] if parts else "."
            mode = os.stat(top, dir_fd=parent, follow_symlinks=False).st_mode
            if not stat.S_ISDIR(mode):
                yield _shown(parts), parent, top
                return
            # fwalk never descends into a symlinked folder and hands out folder descriptors,
            # so a folder renamed or swapped mid-walk cannot lead the search outside.
            for folder, subfolders, files, folder_fd in os.fwalk(top, dir_fd=parent):
                subfolders.sort()
                for name in sorted(files):
                    shown = os.path.normpath(os.path.join(*parts[:-1], folder, name))
                    yield shown, folder_fd, name
        except FileNotFoundError:
            raise ToolError(f"'{_shown(parts)}' does not exist") from None
        finally:
            os.close(parent)


def builtin_tools(
    workspace: Workspace,
    *,
    max_read_bytes: int = 256 * 1024,
    max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES,
    max_image_bytes: int = DEFAULT_MAX_BYTES,
) -> ToolRegistry:
    """The four built-in tools of the contract, bound to `workspace`.

    Args:
        max_read_bytes: read_file shows at most this much of a text file, with a marker.
        max_image_bytes: read_file refuses a larger image or PDF
            (`TURNKEEPER_ATTACHMENT_MAX_BYTES`).
        max_write_bytes: write_file refuses longer content (`TURNKEEPER_MAX_WRITE_BYTES`).
    """

    @worker_tool(name="list_files")
    def list_files(path: DirPath = ".") -> str:
        """List the files and folders directly inside a workspace folder; folders end with '/'."""
        return workspace.list_dir(path)

    @worker_tool(
        name="read_file",
        description=(
            "Read a UTF-8 text file from the workspace. A file over "
            f"{max_read_bytes} bytes is cut off, with a marker giving its full size. "
            "An image (PNG, JPEG, GIF, WebP) or a PDF is shown to you as it is."
        ),
    )
    def read_file(path: FilePath) -> str | Image:
        return workspace.read_file(path, max_read_bytes, max_image_bytes)

    @worker_tool(name="search_files")
    def search_files(
        pattern: Annotated[str, Field(description=f"A regular expression ({PATTERN_SYNTAX}).")],
        path: DirPath = ".",
    ) -> str:
        """Search the text files at or under a workspace path for lines matching a regular
        expression; answers one 'path:line: text' per match."""
        return workspace.search(pattern, path)

    @worker_tool(
        name="write_file",
        requires_approval=True,
        description=(
            "Create or replace a text file in the workspace, creating its folders as needed. "
            f"A human approves every write before it happens; at most {max_write_bytes} bytes."
        ),
    )
    def write_file(
        path: FilePath,
        content: Annotated[str, Field(description="The complete new text of the file.")],
    ) -> str:
        return workspace.write_text(path, content, max_write_bytes)

    previewed_write = dataclasses.replace(write_file, previews_write=True)
    return ToolRegistry([list_files, read_file, search_files, previewed_write])


def _shown(parts: tuple[str, ...]) -> str:
    return "/".join(parts) or "."


def _unshowable(text: str) -> str | None:
    """The first character of `text` that no name may hold, if any."""
    return next((c for c in text if unicodedata.category(c) in _UNSHOWABLE_CATEGORIES), None)


def _hard_link_error(shown: str, links: int) -> ToolError:
    return ToolError(
        f"'{shown}' has {links} hard links, so it may be a file outside the workspace; "
        "only files with one link are read or written"
    )


def _encoded(content: str, max_bytes: int) -> bytes:
    try:
        data = content.encode()
    except UnicodeEncodeError:  # a lone surrogate, which JSON can carry
        raise ToolError(
            "the content is not valid Unicode text (it holds a lone surrogate)"
        ) from None
    if len(data) > max_bytes:
        raise ToolError(
            f"the content is {len(data)} bytes of UTF-8, over write_file's limit of "
            f"{max_bytes} bytes; write a shorter file"
        )
    return data


def _decode(data: bytes, shown: str, *, final: bool) -> str:
    if b"\0" in data:
        raise ToolError(f"'{shown}' is a binary file; read_file reads text files only")
    # An incremental decoder tolerates a character cut in half by the size cap.
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        return decoder.decode(data, final=final)
    except UnicodeDecodeError as err:
        raise ToolError(
            f"'{shown}' is not UTF-8 text (invalid byte at offset {err.start}); "
            "read_file reads text files only"
        ) from None


def _open_quietly(directory: int, name: str) -> int | None:
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=directory)
    except OSError:  # a symlink (never followed) or an unreadable file
        return None


def _is_symlink(name: str, directory: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _dir_error(err: OSError, shown: str, is_symlink: bool) -> ToolError:
    # Linux reports a symlink opened with O_DIRECTORY | O_NOFOLLOW as ENOTDIR, not ELOOP.
    if is_symlink or err.errno == errno.ELOOP:
        return ToolError(f"'{shown}' became a symbolic link while in use")
    if isinstance(err, FileNotFoundError):
        return ToolError(f"folder '{shown}' does not exist")
    if isinstance(err, NotADirectoryError):
        return ToolError(f"'{shown}' is a file, not a folder")
    return ToolError(f"'{shown}': {err.strerror}")


def _file_error(err: OSError, shown: str) -> ToolError:
    if isinstance(err, FileNotFoundError):
        return ToolError(f"'{shown}' does not exist")
    if err.errno == errno.ELOOP:
        return ToolError(f"'{shown}' became a symbolic link while in use")
    return ToolError(f"'{shown}': {err.strerror}")


def _replace_file(directory: int, name: str, data: bytes, shown: str) -> None:
    """Write `name` in `directory` atomically: a reader sees the old text or the new, never half."""
    try:
        existing: os.stat_result | None = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise ToolError(f"'{shown}' is a folder; choose a file name")
    # The rename below would leave the other name's file as it is, but a file linked from
    # outside is not the workspace's to replace either.
    if existing is not None and stat.S_ISREG(existing.st_mode) and existing.st_nlink > 1:
        raise _hard_link_error(shown, existing.st_nlink)
    temporary = f".turnkeeper-{secrets.token_hex(8)}.tmp"
    # O_EXCL | O_NOFOLLOW: the temporary file is always new, never a link planted in advance;
    # the rename then replaces whatever `name` is (even a symlink) without following it.
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=directory
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            if existing is not None and stat.S_ISREG(existing.st_mode):
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            handle.write(data)
            handle.flush()
            os.fsync(fd)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=directory)
        raise
