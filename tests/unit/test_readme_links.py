"""The README's links lead somewhere: every relative link names a file of the repository, and
every `#anchor` into a page is one of its headings. The documentation site checks its own pages
(`mkdocs build --strict` in CI fails on a broken link or anchor); the README is not one of them,
so this test holds it to the same rule."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced blocks, where a `[x](y)` is code, not a link."""
    return re.sub(r"(?ms)^\s*```.*?^\s*```", "", text)


def _slug(heading: str) -> str:
    """A heading's anchor as MkDocs (Python-Markdown's toc) and GitHub both make it."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"(?m)^#{1,6}\s+(.+?)\s*#*$", _prose(page.read_text(encoding="utf-8")))
    return {_slug(heading) for heading in headings}


def _links() -> list[str]:
    return LINK.findall(_prose(README.read_text(encoding="utf-8")))


def test_the_readme_links_into_the_docs() -> None:
    targets = {link.split("#")[0] for link in _links()}
    assert "docs/reference.md" in targets
    assert any(target.endswith(".png") for target in targets), "a screenshot stays linked"


def test_every_relative_link_of_the_readme_resolves() -> None:
    broken = []
    for link in _links():
        if re.match(r"[a-z]+:", link):  # https:, mailto:: not this repository's to check
            continue
        path, _, anchor = link.partition("#")
        target = (ROOT / path) if path else README
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading makes #{anchor}")
    assert broken == []
