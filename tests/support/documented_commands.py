"""The commands the README and the documentation pages show, read out of them: fenced shell
blocks (and output shown with its `$ ` prompt) give complete commands, inline code spans that name
a program give syntax summaries. Both tiers check them: the fast tier every program it can parse
in-process (tests/unit/test_readme_commands.py), the slower one the `temporal` commands against
the bundled Temporal CLI (tests/test_readme_commands.py)."""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The README and every page of the documentation site (docs/, built by mkdocs.yml).
DOCUMENTS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
# A word naming a file of the repository, which must exist.
REPO_PATH = re.compile(r"^(?:agents|bench|deploy|docs|examples|tests)/\S*$|^[\w./-]+\.(?:json|py)$")


@dataclass(frozen=True)
class Command:
    where: str
    words: tuple[str, ...]
    complete: bool  # False: an inline syntax summary, with placeholders and [optional] parts

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.words)}"


def _fenced_blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """(line number of the opening fence, info string, dedented body) of each fenced block."""
    opening: tuple[int, str, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = re.fullmatch(r"\s*```(\S*)\s*", line)
        if fence and opening is None:
            opening = (number, fence.group(1), [])
        elif fence and opening is not None:
            yield opening[0], opening[1], textwrap.dedent("\n".join(opening[2]))
            opening = None
        elif opening is not None:
            opening[2].append(line)


def _shell_lines(body: str) -> Iterator[tuple[int, str]]:
    """Logical command lines: continued after a trailing backslash or an unclosed quote."""
    pending, first = "", 0
    for offset, line in enumerate(body.splitlines()):
        if not pending:
            first = offset
        pending += line + "\n"
        if line.endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote that closes on a later line
            continue
        yield first, pending.replace("\\\n", " ")
        pending = ""


def _simple_commands(line: str) -> Iterator[tuple[str, ...]]:
    words: list[str] = []
    for word in shlex.split(line, comments=True):
        if word in {"&&", "||", ";", "|", "&"}:
            yield tuple(words)
            words = []
        else:
            words.append(word)
    if words:
        yield tuple(words)


def _block_commands(document: str, text: str) -> Iterator[Command]:
    for start, info, body in _fenced_blocks(text):
        for offset, line in _shell_lines(body):
            shown = line.strip()
            if info not in SHELL_BLOCKS:
                # Output shown with its prompt, or a command the output tells the reader to run.
                if shown.startswith("$ "):
                    shown = shown[2:]
                elif not shown.startswith(("turnkeeper ", "temporal ")):
                    continue
            for words in _simple_commands(shown):
                yield Command(f"{document}:{start + 1 + offset}", words, complete=True)


def _inline_commands(document: str, text: str) -> Iterator[Command]:
    # Blocks blanked line for line, so that a span's offset still gives its line.
    prose = re.sub(r"(?ms)^\s*```.*?^\s*```", lambda block: "\n" * block[0].count("\n"), text)
    for span in re.finditer(r"`([^`]+)`", prose):
        words = _words(span.group(1).replace("\\|", "|"))
        program = program_of(without_assignments(words))
        if program in {"turnkeeper", "temporal", "worker.py", "pip"} and len(words) > 1:
            line = prose[: span.start()].count("\n") + 1
            yield Command(f"{document}:{line}", words, complete=False)


def _words(span: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(span))
    except ValueError:  # a summary such as `--reason "…` is not shell syntax
        return tuple(span.split())


def documented_commands() -> list[Command]:
    found: list[Command] = []
    for document in DOCUMENTS:
        text = (ROOT / document).read_text(encoding="utf-8")
        found += [*_block_commands(document, text), *_inline_commands(document, text)]
    return found


def without_assignments(words: tuple[str, ...]) -> tuple[str, ...]:
    """`TEMPORAL_PROFILE=prod python worker.py` -> `python worker.py`."""
    index = 0
    while index < len(words) and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[index]):
        index += 1
    return words[index:]


def program_of(words: tuple[str, ...]) -> str:
    """The program as the README names it: `.venv/bin/turnkeeper` is `turnkeeper`, and
    `python worker.py` is `worker.py`."""
    if not words:
        return ""
    program = words[0].removeprefix(".venv/bin/")
    if program in {"python", "python3"} and len(words) > 1 and words[1] == "worker.py":
        return "worker.py"
    return program


def option_names(words: tuple[str, ...]) -> set[str]:
    """The option names of a command line or a syntax summary (`[--yes|--no]`, `--a/--no-a`)."""
    found = set()
    for word in words:
        for part in re.split(r"[|/\[\]]", word):
            if part.startswith("--"):
                found.add(part.split("=", 1)[0])
    return found


def flag_names(help_text: str) -> set[str]:
    """The flags a `--help` lists (argparse's and the Temporal CLI's layout alike)."""
    return set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", help_text))


def check_repository_paths(words: tuple[str, ...]) -> None:
    """A word naming a file of the repository (`tests/…`, `agents/x.json`) names one that exists."""
    for word in words:
        if REPO_PATH.match(word) and not word.startswith("<"):
            assert (ROOT / word.split("::")[0]).exists(), f"{word} is not in the repository"
