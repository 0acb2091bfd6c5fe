"""Workflow log lines never reuse a key the logging module reserves: `makeRecord` raises on one
only where the level lets the line through, so a worker at INFO failed turns whose tests, at
WARNING, passed (the budget pause's `message=`)."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest
from turnkeeper.workflows.observation import turn_record

WORKFLOWS = Path(turn_record.__file__).parent.parent


def test_the_reserved_keys_are_every_key_a_log_record_refuses() -> None:
    refused = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
    assert refused <= turn_record.RESERVED_LOG_RECORD_KEYS


def _logged_keys(tree: ast.AST) -> list[tuple[int, str]]:
    """Every key of an `extra={…}` literal and every keyword of a turn-record `emit(…)` call."""
    keys: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                keys += [
                    (node.lineno, key.value)
                    for key in keyword.value.keys
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)
                ]
        if _emits(node.func):
            keys += [(node.lineno, k.arg) for k in node.keywords if k.arg and k.arg != "warning"]
    return keys


def _emits(func: ast.expr) -> bool:
    """A call of the turn record's `emit`, by its name or as `record.emit`."""
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name == "emit"


@pytest.mark.parametrize(
    "module", sorted(WORKFLOWS.rglob("*.py")), ids=lambda path: str(path.relative_to(WORKFLOWS))
)
def test_no_workflow_log_line_uses_a_reserved_key(module: Path) -> None:
    tree = ast.parse(module.read_text())
    clashes = [
        f"{module.name}:{line} {key}"
        for line, key in _logged_keys(tree)
        if key in turn_record.RESERVED_LOG_RECORD_KEYS
    ]
    assert clashes == []


def test_the_scan_finds_the_keys_it_looks_for() -> None:
    tree = ast.parse(
        "log.info('x', extra={'message': 1})\nemit('e', message=2, warning=True)\n"
        "record.emit('e', args=3)"
    )
    assert _logged_keys(tree) == [(1, "message"), (2, "message"), (3, "args")]
