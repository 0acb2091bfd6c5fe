"""The Cedar policies the policy tests share: a baseline permit, two forbids and an ask."""

from __future__ import annotations

from pathlib import Path

POLICIES = """\
@id("baseline")
permit(principal, action == Action::"call", resource);

@id("no-env-files")
forbid(principal, action, resource == Tool::"read_file")
when { context.input has path && context.input.path like "*.env" };

@id("ask-before-listing")
@effect("ask")
permit(principal, action, resource == Tool::"list_files");

@id("no-private-listing")
forbid(principal, action, resource == Tool::"list_files")
when { context.input has path && context.input.path like "private*" };
"""

# One more rule, for a reload: every search is forbidden from then on.
NO_SEARCHES = """
@id("no-searches")
forbid(principal, action, resource == Tool::"search_files");
"""


def write_policies(folder: Path, text: str = POLICIES) -> Path:
    path = folder / "tools.cedar"
    path.write_text(text, encoding="utf-8")
    return path
