"""The built-in workspace tools: behaviour, errors, and that no path ever escapes the workspace."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from turnkeeper.activities.tools import line_search
from turnkeeper.activities.tools.registry import ToolError, ToolRegistry, run_tool
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools
from turnkeeper.contracts.attachments import Image

from tests.unit.activities.tools.tool_calls import SECRET, call, names_in, refused


def test_the_four_tools_have_the_contract_names_and_inputs(tools: ToolRegistry) -> None:
    schemas = {d.name: d.input_schema for d in tools.definitions(tools.names())}
    assert sorted(schemas) == ["list_files", "read_file", "search_files", "write_file"]
    assert {name: sorted(s["properties"]) for name, s in schemas.items()} == {
        "list_files": ["path"],
        "read_file": ["path"],
        "search_files": ["path", "pattern"],
        "write_file": ["content", "path"],
    }
    assert {name: s.get("required", []) for name, s in schemas.items()} == {
        "list_files": [],
        "read_file": ["path"],
        "search_files": ["pattern"],
        "write_file": ["path", "content"],
    }
    assert schemas["list_files"]["properties"]["path"]["default"] == "."
    assert all(s["additionalProperties"] is False for s in schemas.values())
    assert '"title"' not in json.dumps(schemas)
    assert [n for n in tools.names() if tools.get(n).requires_approval] == ["write_file"]


def test_the_workspace_root_is_created(root: Path) -> None:
    Workspace(root / "deeper")
    assert (root / "deeper").is_dir()


async def test_list_files_sorts_and_marks_folders(tools: ToolRegistry, root: Path) -> None:
    (root / "notes").mkdir()
    (root / "notes" / "b.md").write_text("b")
    (root / "a.md").write_text("a")
    assert await call(tools, "list_files") == "a.md\nnotes/"
    assert await call(tools, "list_files", path="notes") == "notes/b.md"
    (root / "empty").mkdir()
    assert await call(tools, "list_files", path="empty") == "'empty' is empty"


async def test_list_files_errors(tools: ToolRegistry, root: Path) -> None:
    (root / "a.md").write_text("a")
    assert await refused(tools, "list_files", path="nope") == "folder 'nope' does not exist"
    assert await refused(tools, "list_files", path="a.md") == "'a.md' is a file, not a folder"


async def test_read_file(tools: ToolRegistry, root: Path) -> None:
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("héllo\nworld\n")
    assert await call(tools, "read_file", path="notes/todo.md") == "héllo\nworld\n"
    assert await call(tools, "read_file", path="./notes/../notes/todo.md") == "héllo\nworld\n"


async def test_read_file_caps_large_files_with_a_marker(tools: ToolRegistry, root: Path) -> None:
    # 63 ASCII bytes then a 2-byte character: the cap of 64 cuts it in half.
    (root / "big.md").write_text("x" * 63 + "é" + "y" * 100)
    text = await call(tools, "read_file", path="big.md")
    assert text == "x" * 63 + "\n[truncated: showing the first 64 of 165 bytes of 'big.md']"


async def test_read_file_refuses_what_is_not_text(tools: ToolRegistry, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\x7fELF\0\0\0")
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    (root / "folder").mkdir()
    os.mkfifo(root / "pipe")
    assert "is a binary file" in await refused(tools, "read_file", path="blob.bin")
    assert "not UTF-8 text (invalid byte at offset 3)" in await refused(
        tools, "read_file", path="latin1.txt"
    )
    assert "is a directory" in await refused(tools, "read_file", path="folder")
    assert "is a directory" in await refused(tools, "read_file", path=".")
    assert await refused(tools, "read_file", path="pipe") == "'pipe' is not a file"
    assert await refused(tools, "read_file", path="missing.md") == "'missing.md' does not exist"
    assert await refused(tools, "read_file") == (
        "invalid arguments for read_file: argument 'path': field required"
    )


async def test_read_file_shows_an_image_or_a_pdf_as_it_is(root: Path) -> None:
    small = builtin_tools(Workspace(root), max_image_bytes=1000)  # makes the folder
    png = b"\x89PNG\r\n\x1a\n" + bytes(100)
    (root / "chart.png").write_bytes(png)
    (root / "scan.pdf").write_bytes(b"%PDF-1.4\n" + bytes(2000))

    shown = await run_tool(small.get("read_file"), {"path": "chart.png"})
    too_big = await refused(small, "read_file", path="scan.pdf")

    assert shown == [Image(png, "image/png", name="chart.png")]
    assert too_big == (
        "'scan.pdf' is application/pdf of 2009 bytes, over the 1000-byte limit of one attachment"
    )


async def test_search_files(tools: ToolRegistry, root: Path) -> None:
    (root / "b").mkdir()
    (root / "b" / "deep.md").write_text("nothing\nTODO: deep\n")
    (root / "a.md").write_text("TODO: first\nlater TODO again\n")
    (root / "blob.bin").write_bytes(b"TODO\0binary")
    result = await call(tools, "search_files", pattern=r"TODO\b")
    assert result.splitlines() == [
        "a.md:1: TODO: first",
        "a.md:2: later TODO again",
        "b/deep.md:2: TODO: deep",
        "[1 binary, oversized or unreadable files skipped]",
    ]
    assert await call(tools, "search_files", pattern="deep", path="b/deep.md") == (
        "b/deep.md:2: TODO: deep"
    )
    assert await call(tools, "search_files", pattern="absent", path="b") == (
        "no matches for 'absent' in 'b' (1 files searched)"
    )


async def test_search_files_is_capped(tools: ToolRegistry, root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 500)
    lines = (await call(tools, "search_files", pattern="hit")).splitlines()
    assert len(lines) == 201
    assert lines[199] == "many.txt:200: hit"
    assert lines[-1].startswith("[stopped after 200 matches")


async def test_search_files_errors(tools: ToolRegistry) -> None:
    message = await refused(tools, "search_files", pattern="(unclosed")
    assert message.startswith("invalid regex '(unclosed': missing ): (unclosed (RE2 syntax")
    assert await refused(tools, "search_files", pattern="x", path="nope") == (
        "'nope' does not exist"
    )


async def test_a_catastrophic_pattern_is_answered_at_once(tools: ToolRegistry, root: Path) -> None:
    # Python's `re` needs hours for this line (2^40 ways to split the a's), holding the GIL.
    (root / "bait.txt").write_text("a" * 40 + "!\n" + "a" * 40 + "\n")
    started = time.monotonic()
    assert await call(tools, "search_files", pattern="(a+)+$") == "bait.txt:2: " + "a" * 40
    assert time.monotonic() - started < 1


async def test_search_files_takes_ordinary_patterns(tools: ToolRegistry, root: Path) -> None:
    (root / "code.py").write_text("import os\nclass Ledger(Base):\n    PASSWORD = 'x'\nété\n")
    assert await call(tools, "search_files", pattern=r"(?i)password\s*=") == (
        "code.py:3:     PASSWORD = 'x'"
    )
    assert await call(tools, "search_files", pattern=r"^class\s+(?P<name>\w+)\(.*\):$") == (
        "code.py:2: class Ledger(Base):"
    )
    assert await call(tools, "search_files", pattern=r"^\p{L}+$") == "code.py:4: été"


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(?<=a)b", "invalid perl operator: (?<="),
        (r"(a)\1", "invalid escape sequence: \\1"),
        (r"\w{1,1000}", "compiles to 4003 instructions, the limit is 2000"),
        ("\ud800", "it is not valid Unicode"),
    ],
)
async def test_patterns_re2_cannot_run_or_bound_are_refused(
    tools: ToolRegistry, root: Path, pattern: str, why: str
) -> None:
    (root / "a.md").write_text("ab\n")
    assert why in await refused(tools, "search_files", pattern=pattern)


async def test_a_search_stops_itself_at_its_time_limit(
    tools: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "a.md").write_text("hit\n" * 10)
    monkeypatch.setattr(line_search, "SEARCH_TIME_LIMIT_S", 0.0)
    assert await refused(tools, "search_files", pattern="hit") == (
        "search_files stopped after 0 s with 0 matches in 0 files searched; "
        "narrow the path or simplify the pattern"
    )


async def test_write_file_creates_folders_and_replaces(tools: ToolRegistry, root: Path) -> None:
    assert await call(tools, "write_file", path="out/summary.md", content="é1") == (
        "wrote 3 bytes to 'out/summary.md'"
    )
    (root / "out" / "summary.md").chmod(0o640)
    await call(tools, "write_file", path="out/summary.md", content="second")
    target = root / "out" / "summary.md"
    assert target.read_text() == "second"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (root / "out").iterdir()) == ["summary.md"]


async def test_write_file_errors(tools: ToolRegistry, root: Path) -> None:
    (root / "folder").mkdir()
    (root / "file.md").write_text("x")
    assert "is a folder" in await refused(tools, "write_file", path="folder", content="x")
    assert "workspace root" in await refused(tools, "write_file", path=".", content="x")
    assert await refused(tools, "write_file", path="file.md/x.md", content="x") == (
        "'file.md' is a file, not a folder"
    )
    assert (root / "file.md").read_text() == "x"


ESCAPES = ["../secret.txt", "a/../../secret.txt", "/etc/passwd", "../outside/secret.txt"]


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("tool", ["list_files", "read_file", "search_files", "write_file"])
async def test_paths_outside_are_refused(
    tools: ToolRegistry, outside: Path, tool: str, path: str
) -> None:
    arguments = {"path": path, "pattern": "secret", "content": "pwned"}
    tool_inputs = tools.get(tool).input_model.model_fields
    message = await refused(tools, tool, **{k: v for k, v in arguments.items() if k in tool_inputs})
    assert message == (
        f"'{path}' leads outside the workspace; use a path relative to the workspace root"
    )
    assert (outside / "secret.txt").read_text() == SECRET


async def test_an_absolute_path_to_the_outside_is_refused(
    tools: ToolRegistry, outside: Path
) -> None:
    message = await refused(tools, "read_file", path=str(outside / "secret.txt"))
    assert "leads outside the workspace" in message
    assert SECRET not in message


async def test_symlinks_to_the_outside_are_refused(
    tools: ToolRegistry, root: Path, outside: Path
) -> None:
    (root / "file_link").symlink_to(outside / "secret.txt")
    (root / "dir_link").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "new.txt")
    attempts = [
        ("read_file", {"path": "file_link"}),
        ("read_file", {"path": "dir_link/secret.txt"}),
        ("list_files", {"path": "dir_link"}),
        ("search_files", {"pattern": "secret", "path": "dir_link"}),
        ("search_files", {"pattern": "secret", "path": "file_link"}),
        ("write_file", {"path": "dangling", "content": "pwned"}),
        ("write_file", {"path": "dir_link/new.txt", "content": "pwned"}),
        ("write_file", {"path": "file_link", "content": "pwned"}),
    ]
    for tool, arguments in attempts:
        message = await refused(tools, tool, **arguments)
        assert "leads outside the workspace through a symbolic link" in message, (tool, arguments)
    assert names_in(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


async def test_a_walk_never_follows_symlinks_to_the_outside(
    tools: ToolRegistry, root: Path, outside: Path
) -> None:
    (root / "file_link").symlink_to(outside / "secret.txt")
    (root / "dir_link").symlink_to(outside)
    (root / "inside.md").write_text("a secret inside")
    result = await call(tools, "search_files", pattern="secret")
    assert result.splitlines()[0] == "inside.md:1: a secret inside"
    assert SECRET not in result
    listing = await call(tools, "list_files")
    assert listing == "dir_link\nfile_link\ninside.md"


async def test_a_symlink_loop_is_refused(tools: ToolRegistry, root: Path) -> None:
    (root / "loop").symlink_to(root / "loop")
    assert await refused(tools, "read_file", path="loop/x") == (
        "'loop/x' is a loop of symbolic links"
    )


async def test_symlinks_inside_the_workspace_are_followed(tools: ToolRegistry, root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "a.md").write_text("inside")
    (root / "alias").symlink_to(root / "real")
    assert await call(tools, "read_file", path="alias/a.md") == "inside"
    await call(tools, "write_file", path="alias/b.md", content="via alias")
    assert (root / "real" / "b.md").read_text() == "via alias"


def test_a_folder_swapped_for_a_symlink_after_the_check_is_not_followed(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = Workspace(root)
    (root / "sub").mkdir()
    (root / "plain.txt").write_text("plain")
    paths = ("sub/new.txt", "sub/secret.txt", "plain.txt")
    checked = {path: workspace.resolve(path) for path in paths}
    # The race: the paths were checked while `sub` was a folder and `plain.txt` a file;
    # both are symlinks to the outside when used.
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    (root / "plain.txt").unlink()
    (root / "plain.txt").symlink_to(outside / "secret.txt")
    monkeypatch.setattr(workspace, "resolve", checked.__getitem__)
    with pytest.raises(ToolError, match="'sub' became a symbolic link while in use"):
        workspace.write_text("sub/new.txt", "pwned")
    with pytest.raises(ToolError, match="'sub' became a symbolic link while in use"):
        workspace.read_text("sub/secret.txt", 100)
    with pytest.raises(ToolError, match=r"'plain\.txt' became a symbolic link while in use"):
        workspace.read_text("plain.txt", 100)
    # A write replaces the link itself and never writes through it.
    workspace.write_text("plain.txt", "replaced")
    assert not (root / "plain.txt").is_symlink()
    assert (root / "plain.txt").read_text() == "replaced"
    assert names_in(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("notes\nsecret.txt", "'\\n'"),
        ("a\rb.md", "'\\r'"),
        ("tab\there.md", "'\\t'"),
        ("bell\x07.md", "'\\x07'"),
        ("next-line\x85.md", "'\\x85'"),
        ("line\u2028separator.md", "'\\u2028'"),
    ],
)
@pytest.mark.parametrize("tool", ["list_files", "read_file", "search_files", "write_file"])
async def test_control_characters_in_a_path_are_refused(
    tools: ToolRegistry, root: Path, tool: str, path: str, shown: str
) -> None:
    arguments = {"path": path, "pattern": "x", "content": "spoofed"}
    tool_inputs = tools.get(tool).input_model.model_fields
    message = await refused(tools, tool, **{k: v for k, v in arguments.items() if k in tool_inputs})
    assert message == f"a path cannot contain control characters; this one holds {shown}"
    assert names_in(root) == []


async def test_a_nul_in_a_path_is_still_refused(tools: ToolRegistry) -> None:
    assert await refused(tools, "read_file", path="a\0b") == "a path cannot contain NUL characters"


async def test_names_with_control_characters_cannot_spoof_a_listing(
    tools: ToolRegistry, root: Path
) -> None:
    # Planted by something other than write_file (a cloned repository, an MCP tool).
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("TODO real\n")
    (root / "notes" / "x\nnotes").mkdir()
    (root / "notes" / "x\nnotes" / "passwords.md").write_text("TODO planted\n")
    (root / "notes" / "b.md\u2028c.md").write_text("TODO planted\n")
    assert await call(tools, "list_files", path="notes") == (
        "notes/a.md\n[2 entries whose names hold control characters not shown]"
    )
    assert await call(tools, "search_files", pattern="TODO") == (
        "notes/a.md:1: TODO real\n[2 files whose paths hold control characters skipped]"
    )


async def test_a_hard_link_to_a_file_outside_is_neither_read_nor_written(
    tools: ToolRegistry, root: Path, outside: Path
) -> None:
    (root / "notes").mkdir()
    os.link(outside / "secret.txt", root / "notes" / "linked.txt")
    (root / "notes" / "plain.txt").write_text("nothing secret")
    message = await refused(tools, "read_file", path="notes/linked.txt")
    assert message == (
        "'notes/linked.txt' has 2 hard links, so it may be a file outside the workspace; "
        "only files with one link are read or written"
    )
    found = await call(tools, "search_files", pattern="secret")
    assert found.splitlines() == [
        "notes/plain.txt:1: nothing secret",
        "[1 binary, oversized or unreadable files skipped]",
    ]
    assert "has 2 hard links" in await refused(
        tools, "write_file", path="notes/linked.txt", content="pwned"
    )
    assert (outside / "secret.txt").read_text() == SECRET
    assert os.stat(outside / "secret.txt").st_nlink == 2


async def test_write_file_caps_the_content_it_writes(root: Path) -> None:
    tools = builtin_tools(Workspace(root), max_write_bytes=16)
    assert "at most 16 bytes" in tools.get("write_file").description
    assert await call(tools, "write_file", path="fits.md", content="é" * 8) == (
        "wrote 16 bytes to 'fits.md'"
    )
    assert await refused(tools, "write_file", path="big.md", content="é" * 8 + "x") == (
        "the content is 17 bytes of UTF-8, over write_file's limit of 16 bytes; "
        "write a shorter file"
    )
    assert names_in(root) == ["fits.md"]


async def test_lone_surrogates_are_refused(tools: ToolRegistry, root: Path) -> None:
    assert await refused(tools, "read_file", path="a\ud800.md") == (
        "a path cannot contain control characters; this one holds '\\ud800'"
    )
    assert await refused(tools, "write_file", path="a.md", content="x\ud800") == (
        "the content is not valid Unicode text (it holds a lone surrogate)"
    )
    assert names_in(root) == []
