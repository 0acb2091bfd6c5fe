"""Writing skill folders for the tests, as an operator lays them out under
`TURNKEEPER_SKILLS_DIR`."""

from __future__ import annotations

from pathlib import Path

REFUND_POLICY = """\
---
name: refund-policy
description: How to decide and issue refunds; load it before any refund.
tools: [refund]
---
Refund at most the order's total. Read limits.md for the per-country caps.
"""


def skill_folder(root: Path, folder: str, text: str | None, **files: str) -> Path:
    """`root/folder` with `text` as its SKILL.md (None: no SKILL.md) and the other `files`."""
    path = root / folder
    path.mkdir(parents=True)
    if text is not None:
        (path / "SKILL.md").write_text(text)
    for name, content in files.items():
        (path / name).write_text(content)
    return path


def front_matter(**fields: str) -> str:
    """A SKILL.md with these front matter lines (`key: value` as written) and a short body."""
    lines = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"---\n{lines}---\nThe instructions.\n"


def billion_laughs(levels: int = 9) -> str:
    """Front matter whose `tools` expand to 10**levels strings once anything walks them (the
    error message of a plain loader's `tools` check does: the worker hung at start)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"l{level}: &l{level} [{refs}]")
    lines.append(f"tools: *l{levels}")
    return "name: laughs\ndescription: Expands.\n" + "\n".join(lines) + "\n"
