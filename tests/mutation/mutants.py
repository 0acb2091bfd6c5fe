"""A module's mutants: cosmic-ray's session (a SQLite work database that `cr-report` reads too),
each mutant described by the lines it changes, and those left out of the score marked so."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cosmic_ray.commands import init
from cosmic_ray.mutating import mutate_code
from cosmic_ray.plugins import get_operator
from cosmic_ray.work_db import WorkDB
from cosmic_ray.work_item import MutationSpec, WorkerOutcome, WorkItem, WorkResult

from tests.mutation.config import Equivalent
from tests.mutation.operators import register

register()


@dataclass(frozen=True)
class Mutant:
    """One mutation of the module: where it is and what it does to the code."""

    job_id: str
    spec: MutationSpec
    line: int
    before: str  # the changed lines, stripped and joined by " / "
    after: str

    def shown(self) -> str:
        after = self.after or "(removed)"
        return f"{self.spec.module_path}:{self.line}: {self.before}  ->  {after}"


@dataclass(frozen=True)
class Session:
    """The mutants to test, and those not counted (with why)."""

    db: WorkDB
    to_test: list[Mutant]
    in_annotations: list[Mutant]
    equivalent: list[tuple[Mutant, Equivalent]]
    unmatched: list[Equivalent]  # listed as equivalent, but no such mutant exists any more


def new_session(module: Path, db: WorkDB, equivalents: list[Equivalent]) -> Session:
    """Replaces `db`'s work with every mutant of `module`; annotations and the listed
    equivalent mutants are recorded as skipped, so that `cr-report` counts them apart too."""
    init([module], db, {})
    source = module.read_text(encoding="utf-8")
    annotations = list(_annotation_spans(source))
    mutants = [_describe(item, source) for item in db.work_items]
    session = Session(db, [], [], [], [])
    for mutant in sorted(mutants, key=lambda m: (m.line, m.spec.operator_name, m.spec.occurrence)):
        listed = _listed(mutant, equivalents)
        if any(_within(mutant.spec.start_pos, span) for span in annotations):
            session.in_annotations.append(mutant)
            _skip(db, mutant, "in a type annotation")
        elif listed is not None:
            session.equivalent.append((mutant, listed))
            _skip(db, mutant, f"equivalent: {listed.why}")
        else:
            session.to_test.append(mutant)
    found = {id(entry) for _, entry in session.equivalent}
    session.unmatched.extend(entry for entry in equivalents if id(entry) not in found)
    return session


def _describe(item: WorkItem, source: str) -> Mutant:
    (spec,) = item.mutations
    operator = get_operator(spec.operator_name)(**(spec.operator_args or {}))
    mutated = mutate_code(source, operator, spec.occurrence) or source
    removed, added = _changed_lines(source, mutated)
    return Mutant(item.job_id, spec, spec.start_pos[0], " / ".join(removed), " / ".join(added))


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")) or not line[1:].strip():
            continue  # the diff's headers, and blank lines a removed decorator leaves around it
        (removed if line.startswith("-") else added).append(line[1:].strip())
    return removed, added


def _listed(mutant: Mutant, equivalents: Iterable[Equivalent]) -> Equivalent | None:
    for entry in equivalents:
        if (entry.before, entry.after) == (mutant.before, mutant.after):
            return entry
    return None


def _skip(db: WorkDB, mutant: Mutant, why: str) -> None:
    db.set_result(mutant.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=why))


Span = tuple[tuple[int, int], tuple[int, int]]


def _annotation_spans(source: str) -> Iterator[Span]:
    """Where the type annotations are, as (line, column) pairs in characters, as cosmic-ray
    counts them. A mutated annotation is either never evaluated (`from __future__ import
    annotations`) or fails the import at once: neither says anything about the tests."""
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        for annotation in _annotations_of(node):
            yield (
                _position(lines, annotation.lineno, annotation.col_offset),
                _position(lines, annotation.end_lineno or 0, annotation.end_col_offset or 0),
            )


def _annotations_of(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.AnnAssign | ast.arg) and node.annotation is not None:
        yield node.annotation
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
        yield node.returns


def _position(lines: list[str], line: int, byte_column: int) -> tuple[int, int]:
    # ast counts columns in UTF-8 bytes, parso (and so cosmic-ray) in characters.
    text = lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8", errors="ignore")
    return line, len(text)


def _within(position: tuple[int, int], span: Span) -> bool:
    start, end = span
    return start <= tuple(position) < end
