"""What went wrong with a remote agent, in a sentence the model (and the person reading the turn)
can act on, and whether it was the network (worth trying again) or the agent's answer."""

from __future__ import annotations

import httpx
from a2a.client.errors import A2AClientTimeoutError
from a2a.utils.errors import A2AError, TaskNotFoundError
from google.protobuf.json_format import ParseError


class ElsewhereCard(ValueError):
    """A card whose endpoints are on another origin than the configured URL (`remote.py`)."""


def is_unreachable(err: BaseException) -> bool:
    """Whether `err` means the agent could not be reached or did not answer in time (as opposed
    to answering something wrong)."""
    if isinstance(err, (A2AClientTimeoutError, httpx.TransportError)):
        return True
    cause = err.__cause__
    return isinstance(cause, httpx.TransportError)


def describe_failure(agent: str, what: str, err: BaseException) -> str:
    """`A2A agent 'x': <what>: <why>`; never the request's content or a credential (neither
    is in the SDK's messages: they name the URL and the status)."""
    if is_unreachable(err):
        why = f"it could not be reached ({_detail(err)})"
    elif isinstance(err, TaskNotFoundError):
        why = "it no longer knows the task"
    elif isinstance(err, ElsewhereCard):
        why = str(err)
    elif isinstance(err, KeyError):
        why = "it is not configured on this worker"
    elif isinstance(err, ParseError | ValueError) or isinstance(
        err.__cause__, ParseError | ValueError
    ):
        why = f"its answer is not what the A2A protocol says ({_detail(err)})"
    elif isinstance(err, A2AError):
        why = f"it answered with an error ({_detail(err)})"
    else:
        why = f"{type(err).__name__}: {_detail(err)}"
    return f"A2A agent {agent!r}: {what}: {why}"


def _detail(err: BaseException) -> str:
    return str(err) or type(err).__name__
