"""What identifies a model call in a cassette, and how two calls differ.

The key covers everything sent to the provider (provider, model, system prompt, parameters,
tools, messages) and nothing else: no workflow, task or turn id, so that a turn started anew
with the same request meets its recorded answers. A call the cassette lacks is explained by the
first difference from its nearest recorded call, read in the order a conversation grows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any, Final

from turnkeeper.activities.providers.provider import ModelRequest

# Messages last: a later call of the same turn shares the longest run with its predecessor.
_FIELD_ORDER: Final = ("provider", "model", "system", "max_tokens", "prompt_cache", "tools")
_SHOWN_CHARS: Final = 80
ABSENT: Final = "(absent)"

Leaf = tuple[str, Any]


def request_record(provider: str, request: ModelRequest) -> dict[str, Any]:
    """The call as the cassette stores and compares it: plain JSON, `provider` first."""
    fields = request.model_dump(mode="json")
    ordered = {"provider": provider}
    for name in (*_FIELD_ORDER[1:], *sorted(fields)):
        if name in fields and name not in ordered:
            ordered[name] = fields[name]
    return ordered


def request_key(record: dict[str, Any]) -> str:
    """A SHA-256 of the call's canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def leaves(value: Any, path: str = "") -> Iterator[Leaf]:
    """Every scalar of `value` with its path (`messages[2].content[0].text`), in the record's
    order (dict keys as stored, lists by index); an empty list or object is a leaf itself."""
    if isinstance(value, dict) and value:
        for name, item in value.items():
            yield from leaves(item, f"{path}.{name}" if path else name)
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _shared_run(sent: list[Leaf], recorded: list[Leaf]) -> int:
    """How many leaves the two calls share before the first difference."""
    run = 0
    for mine, theirs in zip(sent, recorded, strict=False):
        if mine != theirs:
            break
        run += 1
    return run


def nearest_difference(sent: dict[str, Any], recorded: Iterable[dict[str, Any]]) -> str | None:
    """The first difference between `sent` and the recorded call that shares the longest run
    of leaves with it, in one sentence; None when nothing is recorded."""
    mine = list(leaves(sent))
    best: tuple[int, list[Leaf]] | None = None
    for candidate in recorded:
        theirs = list(leaves(candidate))
        run = _shared_run(mine, theirs)
        if best is None or run > best[0]:
            best = (run, theirs)
    if best is None:
        return None
    run, theirs = best
    sent_leaf = mine[run] if run < len(mine) else None
    recorded_leaf = theirs[run] if run < len(theirs) else None
    return _describe(sent_leaf, recorded_leaf)


def _describe(sent: Leaf | None, recorded: Leaf | None) -> str:
    if sent is not None and recorded is not None and sent[0] == recorded[0]:
        return f"at {sent[0]}: sent {_shown(sent[1])}, recorded {_shown(recorded[1])}"
    if sent is not None and recorded is not None:
        return f"sent {sent[0]} = {_shown(sent[1])} where the recording has {recorded[0]}"
    if sent is not None:
        return f"sent {sent[0]} = {_shown(sent[1])}, which the recording lacks"
    if recorded is not None:
        return f"the recording has {recorded[0]} = {_shown(recorded[1])}, which was not sent"
    return "no difference"  # the same call: its key cannot be missing


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else f"{text[: _SHOWN_CHARS - 1]}…"
