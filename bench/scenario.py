"""The scripted turn that both sides play.

One turn is K iterations of (model call -> `fetch_blob` tool call returning 2 KiB), then one
answering model call; every model call takes L. K and L travel in the task's text
(`k=<K> latency_ms=<L>`), so the fake model needs no state beyond the conversation it is sent.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

# The two sides of every comparison.
FLOOR: Final = "floor"
OURS: Final = "turnkeeper"

TOOL_NAME: Final = "fetch_blob"
# The tool a parking turn calls after its K `fetch_blob` calls; the task requires its approval,
# so the turn parks with a transcript of K iterations.
PARK_TOOL_NAME: Final = "go_ahead"
BLOB_BYTES: Final = 2048
MODEL: Final = "anthropic:claude-sonnet-4-6"

_SHAPE = re.compile(r"\bk=(\d+)\s+latency_ms=(\d+(?:\.\d+)?)(\s+park=1)?")


def make_blob(size: int = BLOB_BYTES) -> str:
    """`size` bytes of a tool result: the hex of a hash chain, fixed, ASCII (no JSON escaping)
    and not trivially compressible."""
    digest = b"turnkeeper-bench"
    chunks: list[str] = []
    while sum(map(len, chunks)) < size:
        digest = hashlib.sha256(digest).digest()
        chunks.append(digest.hex())
    return "".join(chunks)[:size]


BLOB: Final = make_blob()


def task_text(k: int, latency_ms: float, *, park: bool = False) -> str:
    """The task input that tells the fake model the turn's shape (`park`: call `go_ahead`
    after the K tool calls instead of answering)."""
    shape = f"k={k} latency_ms={latency_ms:g}" + (" park=1" if park else "")
    return f"Benchmark turn, call fetch_blob until told otherwise: {shape}"


def parse_task_text(text: str) -> tuple[int, float, bool]:
    """`(K, L in seconds, park)` from a task input made by `task_text`.

    Raises:
        ValueError: the text carries no turn shape.
    """
    found = _SHAPE.search(text)
    if found is None:
        raise ValueError(f"no 'k=<K> latency_ms=<L>' in the task input {text[:120]!r}")
    return int(found.group(1)), float(found.group(2)) / 1000.0, found.group(3) is not None
