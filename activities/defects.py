"""A defect of ours inside an activity fails its call once, typed, instead of posing as an outage.

Temporal retries every exception an activity raises unless told otherwise, so a `TypeError` in
our own adapter code was retried six times over a minute and then reported as `LLMUnavailable`:
a bug disguised as a provider outage, billed on every attempt that reached the provider. The
exception types below are programming errors; they repeat identically on every attempt, so the
call fails at once with a non-retryable `TurnInternalError` naming the exception. Provider,
network and store failures are other types (classified `ModelCallError`s, `OSError`, the SDKs'
own errors) and keep their retry ladder.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.errors import TURN_INTERNAL_ERROR

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

# Not LookupError as a whole: the content store's ContentMissingError is one, and it is handled.
DEFECT_TYPES: Final = (
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    NameError,
    AssertionError,
    ZeroDivisionError,
    NotImplementedError,
    RecursionError,
    ValueError,
)
# The exception's own text only, bounded: never the arguments or content of the call.
_MESSAGE_LIMIT: Final = 300


@contextmanager
def defects_fail_once(activity_name: str) -> Iterator[None]:
    """Turns a defect raised inside the block into a non-retryable `TurnInternalError`."""
    try:
        yield
    except DEFECT_TYPES as err:
        # Where, not what: an exception's text can quote content (a pydantic error quotes the
        # input it refused), and log lines carry none. The text travels in the failure, which
        # the codec encrypts.
        log.error(
            "activity_defect",
            activity=activity_name,
            error_type=type(err).__name__,
            raised_at=_raised_at(err),
        )
        raise internal_error(activity_name, err) from err


def _raised_at(err: BaseException) -> str:
    """`file.py:line in function` of the innermost frame, the place to look for the bug."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return "unknown"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"


def internal_error(activity_name: str, err: BaseException) -> ApplicationError:
    text = " ".join(str(err).split())
    if len(text) > _MESSAGE_LIMIT:
        text = f"{text[: _MESSAGE_LIMIT - 1]}…"
    return ApplicationError(
        f"internal error in the {activity_name} activity: {type(err).__name__}: {text}",
        type=TURN_INTERNAL_ERROR,
        non_retryable=True,
    )
