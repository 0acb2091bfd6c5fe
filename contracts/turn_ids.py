"""Which workflow ids a caller may give a turn, and which the runtime keeps for its own workflows.

The runtime names its own workflows by id: an agent's standing approvals
(`approval-cache-<agent id>`), a tenant's ledger (`turnkeeper-tenant/<tenant>`), a model's
rate-limit ledger (`rate-limit-<key>`), a sub-agent's turn (`<parent id>/<name>-<k>`) and a
session's turn (`<session id>/turn-<n>`). A turn started at one of those ids would take it from
the runtime (every later approval of the agent, every model call of the tenant, the lead's
sub-agent would fail), so every entry point refuses them, and a turn that was started at one
anyway (with the raw `temporal` CLI) fails at its start with `InvalidTurnRequest`.

Pure functions, no I/O: the client, the HTTP API and the workflow run the same checks.
"""

from __future__ import annotations

import re
from typing import Final

from turnkeeper.contracts.approvals import APPROVAL_CACHE_ID_PREFIX
from turnkeeper.contracts.rate_limits import RATE_LIMIT_ID_PREFIX
from turnkeeper.contracts.tenants import LEDGER_ID_PREFIX
from turnkeeper.contracts.waits import EVENT_ID_PREFIX

# What a caller may name a turn: a letter or digit, then letters, digits and `. _ - : @`, at most
# 200 characters. No `/` (the runtime's nested ids), no spaces or control characters (ids are
# shown in terminals, URLs and the Web UI).
TURN_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"
TURN_ID_MAX_CHARS: Final = 200
_TURN_ID = re.compile(TURN_ID_PATTERN)

# Separates a nested id (a sub-agent's or a session's turn) from its parent's.
NESTED_ID_SEPARATOR: Final = "/"

RUNTIME_ID_PREFIXES: Final[dict[str, str]] = {
    APPROVAL_CACHE_ID_PREFIX: "an agent's standing approvals",
    LEDGER_ID_PREFIX: "a tenant's spend ledger",
    RATE_LIMIT_ID_PREFIX: "a model's rate-limit ledger",
}

# A served agent's conversation (`turnkeeper serve --agents`): the session
# `conversation:<agent id>:<conversation id>`, which the server starts for the caller that owns
# it. Not in RUNTIME_ID_PREFIXES, which the workflows also check: that session is one.
CONVERSATION_ID_PREFIX: Final = "conversation:"

# A scheduled turn (`turnkeeper schedule create`): Temporal's scheduler starts each run at
# `schedule:<schedule name>-<time>`. Not in RUNTIME_ID_PREFIXES either: those runs are turns.
SCHEDULE_RUN_ID_PREFIX: Final = "schedule:"


def runtime_prefixed(workflow_id: str) -> str | None:
    """Which of the runtime's own workflows `workflow_id` is named like (an approval cache, a
    ledger), or None. No turn may have such an id, not even one the runtime starts."""
    for prefix, owner in RUNTIME_ID_PREFIXES.items():
        if workflow_id.startswith(prefix):
            return f"ids starting {prefix!r} belong to {owner}"
    return None


def runtime_owned(workflow_id: str) -> str | None:
    """What the runtime keeps `workflow_id` for, or None when a turn may have it.

    Ids with a `/` are the runtime's nested turns (sub-agents, session turns): only the runtime
    starts a turn at one, as a child of the workflow the id names."""
    prefixed = runtime_prefixed(workflow_id)
    if prefixed is not None:
        return prefixed
    if workflow_id.startswith(CONVERSATION_ID_PREFIX):
        return f"ids starting {CONVERSATION_ID_PREFIX!r} belong to served agents' conversations"
    if workflow_id.startswith(SCHEDULE_RUN_ID_PREFIX):
        return f"ids starting {SCHEDULE_RUN_ID_PREFIX!r} belong to the runs of scheduled turns"
    if workflow_id.startswith(EVENT_ID_PREFIX):
        # Started by `signal_event` only, by signal-with-start: a turn started there by a caller
        # would take every later event of its key.
        return f"ids starting {EVENT_ID_PREFIX!r} belong to the turns events start"
    if NESTED_ID_SEPARATOR in workflow_id:
        return "ids with '/' belong to the runtime's sub-agent and session turns"
    return None


def turn_id_problem(workflow_id: str) -> str | None:
    """Why a caller may not give a turn `workflow_id` (one sentence), or None when it may."""
    owned = runtime_owned(workflow_id)
    if owned is not None:
        return f"id {workflow_id!r} is reserved: {owned}"
    if not _TURN_ID.match(workflow_id):
        return (
            f"id {workflow_id[:TURN_ID_MAX_CHARS]!r} is not a turn id: a letter or digit, then "
            f"letters, digits and '. _ - : @', at most {TURN_ID_MAX_CHARS} characters"
        )
    return None
