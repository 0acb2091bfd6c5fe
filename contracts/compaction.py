"""Opt-in compaction (seed 004, ADR 0009): `agent.compaction` makes a turn shorten what it sends
to the model once the counted input would exceed `max_input_tokens`. Absent, a turn never
rewrites what it sends. The transcript (the `transcript` query, the report, the content store)
always keeps every message; compaction changes only the requests.

Strategies:
    drop_oldest: whole exchanges (an assistant message and the user message answering it, so a
        `tool_use` never loses its `tool_result`) leave from the oldest; the first user message
        stays, with a note that earlier messages were left out.
    summarize: the same exchanges are replaced by a summary that a model call writes (billed
        and budgeted like every model call of the turn), added to the first user message.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

CompactionStrategy = Literal["drop_oldest", "summarize"]
CompactionTrigger = Literal["max_input_tokens", "context_too_long"]

# Tokens are counted as characters over four (ADR 0009's heuristic) for what was added since the
# last model call, on top of the provider's own count of that call's input (its billed usage).
CHARS_PER_TOKEN: Final = 4
# A compaction goes down to this share of max_input_tokens, so that the next one is many calls
# away: each one re-sends the kept conversation once and, for summarize, costs a model call.
COMPACT_TO_SHARE: Final = 0.5


class CompactionSpec(ContractModel):
    """`agent.compaction` (`turnkeeper.Compaction`): how, and from which input size on, a turn
    shortens what it sends to the model."""

    model_config = ConfigDict(extra="forbid")
    strategy: CompactionStrategy
    """How earlier exchanges leave the request: `drop_oldest` or `summarize` (see the module)."""
    max_input_tokens: int = Field(ge=256)
    """The counted input that triggers a compaction, which then goes down to half of it."""


class CompactedHistory(ContractModel):
    """How a compacted turn's last request saw the conversation its report's `conversation_ref`
    names: the first message, then (with the note or the summary) everything after message
    `left_out`. A turn that continues that conversation (`history_ref`) with this as its
    `history_compaction` goes on from there, as one long turn would, instead of compacting the
    whole conversation again (for `summarize`, a summary call every turn)."""

    model_config = ConfigDict(extra="forbid")
    left_out: int = Field(ge=1)
    """How many messages after the first the last request left out."""
    summary: str | None = None
    """The summary that stood in for them (`summarize`), or None (`drop_oldest`)."""
