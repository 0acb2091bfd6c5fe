"""Where workflow code refuses what reached a worker that requires encryption unencrypted.

The worker's codec marks such payloads (`contracts/plaintext.py`), and a handler that takes its
input as a `RawValue` sees the mark (so does a turn's or session's first-run request: see
`TurnPayloadConverter.from_payloads`). A start request is failed, a signal ignored, an update
rejected by its validator.

Replay. The mark is not in history: whichever worker replays adds it, when it requires
encryption. A history recorded before the requirement was switched on holds plaintext payloads
that the worker now marks, and refusing them on replay would take a path the history did not
take. So every refusal that shows in history (a failed start, an ignored signal) goes through
`workflow.patched(PATCH)`: a new history records the marker and refuses; an old one, replayed,
has no marker and accepts as it did, and keeps accepting for the rest of that run (the SDK
remembers a patch's first answer), so a run that began in plaintext ends as it began. The
opposite switch is not covered: a history
that refused a signal cannot replay on a worker that does not require encryption (it applies the
signal this time), so keep the requirement on while such turns run. Update validators refuse
without the patch: they run only for a new update, never on replay, and a rejected update leaves
nothing in history. No golden history carries the mark (they replay without the requirement,
and with it only the plaintext ones are marked, which the patch lets through:
tests/unit/workflows/test_replay.py replays them both ways).
"""

from __future__ import annotations

from typing import Any, Final

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts import errors
    from turnkeeper.contracts.plaintext import is_marked, refusal, unmarked

PATCH: Final = "refuse-unencrypted-payloads"


def arrived_unencrypted(value: object) -> bool:
    """Whether `value` reached a worker that requires encryption unencrypted."""
    return isinstance(value, RawValue) and is_marked(value.payload)


def refused(value: object) -> bool:
    """Whether to refuse `value` in a handler whose refusal shows in history (a start, a
    signal); see the module docstring for why a history without the patch accepts it."""
    return arrived_unencrypted(value) and workflow.patched(PATCH)


def encryption_required(what: str, *details: Any) -> ApplicationError:
    """The refusal of `what` (e.g. "the turn request"), saying how to send it encrypted."""
    return ApplicationError(
        refusal(what), *details, type=errors.ENCRYPTION_REQUIRED, non_retryable=True
    )


def reject_unencrypted(value: object, what: str) -> None:
    """For update validators: rejects `value` when it arrived unencrypted (no patch needed)."""
    if arrived_unencrypted(value):
        raise encryption_required(what)


def decoded(value: RawValue | Any) -> Any:
    """The JSON of a `RawValue`, mark or not; any other value as Temporal decoded it."""
    if isinstance(value, RawValue):
        return workflow.payload_converter().from_payload(unmarked(value.payload))
    return value
