"""Rate limits shared by the fleet: the worker variable `TURNKEEPER_RATE_LIMITS`, the limit key
a model call counts against, and the messages of the `RateLimiterWorkflow` ledger (one per key,
workflow id `rate-limit-<key>`), readable with nothing but the `temporal` CLI:

    temporal workflow query --workflow-id 'rate-limit-anthropic:*' --name window
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Final, Literal

from pydantic import Field, ValidationError
from turnkeeper.contracts.contract_model import ContractModel

RATE_LIMITS_ENV: Final = "TURNKEEPER_RATE_LIMITS"
RATE_LIMITER_WORKFLOW: Final = "RateLimiterWorkflow"
UPDATE_ACQUIRE: Final = "acquire"
SIGNAL_SETTLE: Final = "settle"
SIGNAL_BACK_OFF: Final = "back_off"
QUERY_WINDOW: Final = "window"
# The turn hears that its model call waits for capacity (shown by its `status` query).
SIGNAL_CAPACITY_WAIT: Final = "capacity_wait"
RATE_LIMIT_ID_PREFIX: Final = "rate-limit-"
WINDOW_MS: Final = 60_000
# A ledger continues as new after this many history events (or sooner, when Temporal suggests):
# within one page of history, which a worker that is not the ledger's sticky one fetches whole
# (past one page, a tenant's ledger stalled: `workflows/fleet/tenant_ledger_workflow.py`).
DEFAULT_MAX_HISTORY_EVENTS: Final = 900

Measure = Literal["requests", "input_tokens", "output_tokens", "provider_backoff"]


class RateLimitConfigError(ValueError):
    """`TURNKEEPER_RATE_LIMITS` does not parse; the message names the entry."""


class RateLimit(ContractModel):
    """The limits of one key, each per 60-second window; an unset one does not limit."""

    model_config = {"extra": "forbid", "frozen": True}

    requests_per_minute: int | None = Field(default=None, gt=0)
    """Model calls that may start in any 60-second window."""
    input_tokens_per_minute: int | None = Field(default=None, gt=0)
    """Input tokens (estimated at the start, settled after) in any 60-second window."""
    output_tokens_per_minute: int | None = Field(default=None, gt=0)
    """Output tokens (`max_tokens` at the start, settled after) in any 60-second window."""


def parse_rate_limits(text: str | None) -> dict[str, RateLimit]:
    """The limits of `TURNKEEPER_RATE_LIMITS` by key (`provider:model` or `provider:*`); none
    for an unset or empty variable.

    Raises:
        RateLimitConfigError: Not a JSON object, a key that is not `provider:model` or
            `provider:*`, or an entry with an unknown field, a value that is not a positive whole
            number, or no limit at all; the message names the entry.
    """
    if text is None or not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise RateLimitConfigError(f"{RATE_LIMITS_ENV} is not JSON: {err}") from None
    if not isinstance(raw, dict):
        raise RateLimitConfigError(
            f'{RATE_LIMITS_ENV} must be a JSON object {{"provider:model": {{...}}}}'
        )
    return {key: _entry(key, value) for key, value in raw.items()}


def _entry(key: str, value: object) -> RateLimit:
    provider, _, model = key.partition(":")
    if not provider or not model or provider == "*":
        raise RateLimitConfigError(
            f"{RATE_LIMITS_ENV} entry {key!r}: the key must be 'provider:model' or 'provider:*'"
        )
    if not isinstance(value, dict):
        raise RateLimitConfigError(f"{RATE_LIMITS_ENV} entry {key!r}: must be a JSON object")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in value.values()):
        raise RateLimitConfigError(
            f"{RATE_LIMITS_ENV} entry {key!r}: every limit must be a positive whole number"
        )
    try:
        limit = RateLimit.model_validate(value)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()
        )
        raise RateLimitConfigError(f"{RATE_LIMITS_ENV} entry {key!r}: {problems}") from None
    if limit == RateLimit():
        raise RateLimitConfigError(f"{RATE_LIMITS_ENV} entry {key!r}: names no limit")
    return limit


def limit_key(limits: dict[str, RateLimit], model: str) -> str | None:
    """The key `model` counts against: its own entry, else its provider's `provider:*`."""
    if model in limits:
        return model
    wildcard = f"{model.partition(':')[0]}:*"
    return wildcard if wildcard in limits else None


def rate_limiter_id(key: str) -> str:
    """The workflow id of the ledger of `key`."""
    return f"{RATE_LIMIT_ID_PREFIX}{key}"


class Grant(ContractModel):
    """Capacity taken from a window: when, and how much."""

    id: str
    """Who took it (the model call's activity attempt), to settle it later."""
    at_ms: int
    """When (epoch milliseconds, the ledger's clock)."""
    requests: int = 1
    """Requests taken."""
    input_tokens: int = 0
    """Input tokens taken (estimated, then settled)."""
    output_tokens: int = 0
    """Output tokens taken (`max_tokens`, then settled)."""


class RateLimiterInput(ContractModel):
    """A ledger's start (and its continue-as-new): its key and the window carried over."""

    key: str
    """The limit key (`provider:model` or `provider:*`)."""
    grants: list[Grant] = Field(default_factory=list)
    """Grants still inside the window."""
    blocked_until_ms: int = 0
    """No grant before this instant (epoch ms): the provider said it is rate limited."""
    back_offs: int = 0
    """How many 429s the ledger has heard from the provider since it started."""
    max_history_events: int = DEFAULT_MAX_HISTORY_EVENTS
    """History length after which the ledger continues as new."""
    window_ms: int = Field(default=WINDOW_MS, gt=0)
    """The window's length: 60 s, as `TURNKEEPER_RATE_LIMITS` means it; shorter only for tests
    and benches that start the ledger themselves before any turn asks."""


class AcquireInput(ContractModel):
    """One model call asks for capacity."""

    id: str
    """Who asks (unique per attempt): an asker granted once is granted again, not twice."""
    limit: RateLimit
    """The asking worker's limit of the key."""
    input_tokens: int = 0
    """Estimated input tokens of the call."""
    output_tokens: int = 0
    """The call's `max_tokens`."""


class AcquireResult(ContractModel):
    """The call's capacity, reserved at an instant from now, and what it waits for until then."""

    granted: bool
    """The capacity is taken (reserved `wait_ms` from now)."""
    wait_ms: int = 0
    """How long until the call may start: the reserved instant, from now."""
    awaiting: Measure | None = None
    """When it must wait: the limit that holds it back."""


class SettleTokensInput(ContractModel):
    """A call's actual tokens, replacing the estimate of its grant."""

    id: str
    """The grant's id."""
    input_tokens: int
    """Input tokens counted by the provider."""
    output_tokens: int
    """Output tokens counted by the provider."""


class BackOffInput(ContractModel):
    """The provider answered 429 (or said its limit is spent): no grant until `seconds` pass."""

    seconds: float = Field(ge=0)
    """How long the provider asked to wait."""


class CapacityWait(ContractModel):
    """A model call of the turn waits for fleet capacity (status `capacity_awaited`)."""

    key: str
    """The limit key waited on."""
    awaiting: Measure
    """The limit that holds the call back."""
    wait_ms: int
    """The wait the ledger announced when the call started to wait."""
    since: datetime | None = None
    """When the turn heard of the wait (set by the turn)."""
