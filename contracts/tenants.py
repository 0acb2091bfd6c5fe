"""Tenants: who a turn's spend is billed to (`TurnRequest.tenant`), the names of the tenant's
ledger workflow (one per tenant, `turnkeeper-tenant/<name>`, keeping its spend and caps), and
what travels to and from it."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Final

from pydantic import AfterValidator, ConfigDict, Field
from turnkeeper.contracts.contract_model import ContractModel

# A name: a letter or digit, then letters, digits, `.`, `_` or `-`, at most 64 in all. It goes
# into a workflow id and a search attribute, so no spaces, slashes or control characters.
TENANT_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_TENANT_NAME = re.compile(TENANT_NAME_PATTERN)

LEDGER_WORKFLOW_TYPE: Final = "TenantLedgerWorkflow"
LEDGER_ID_PREFIX: Final = "turnkeeper-tenant/"
UPDATE_RESERVE: Final = "reserve"
UPDATE_SETTLE: Final = "settle"
UPDATE_SET_CAPS: Final = "set_caps"
QUERY_SPEND: Final = "spend"
# Sent by a ledger to the turns that wait for its caps when a cap changes.
SIGNAL_TENANT_CAPS_CHANGED: Final = "tenant_caps_changed"
# The model-call activity's refusal of a call over its tenant's cap; the turn fails with
# TurnBudgetExceeded (or pauses) with its message.
TENANT_CAP_REACHED: Final = "TenantCapReached"


def tenant_problem(name: str) -> str | None:
    """Why `name` is not a tenant name, or None."""
    if _TENANT_NAME.fullmatch(name):
        return None
    return (
        f"{name!r} is not a tenant name: 1 to 64 of letters, digits, '.', '_' and '-', "
        "starting with a letter or digit"
    )


def _checked_name(name: str) -> str:
    problem = tenant_problem(name)
    if problem:
        raise ValueError(problem)
    return name


TenantName = Annotated[str, AfterValidator(_checked_name)]


def ledger_id(tenant: str) -> str:
    """The workflow id of the tenant's ledger."""
    return LEDGER_ID_PREFIX + tenant


class TenantCaps(ContractModel):
    """A tenant's spend caps in US dollars, by UTC day and UTC month; None: no cap."""

    model_config = ConfigDict(extra="forbid")
    usd_per_day: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The most the tenant's turns may spend in one UTC day."""
    usd_per_month: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The most the tenant's turns may spend in one UTC month."""


class SetCapsInput(ContractModel):
    """The ledger's `set_caps` update: the tenant's new caps (both replace the old ones)."""

    model_config = ConfigDict(extra="forbid")
    tenant: TenantName
    """The tenant."""
    caps: TenantCaps
    """The new caps."""


class ReserveInput(ContractModel):
    """The ledger's `reserve` update: a model call about to be made asks for its maximum cost."""

    model_config = ConfigDict(extra="forbid")
    tenant: TenantName
    """The tenant the call is billed to."""
    key: str = Field(min_length=1)
    """The call's key (workflow id and activity id): a retried call replaces its reservation."""
    amount_usd: float = Field(ge=0, allow_inf_nan=False)
    """The call's maximum cost: its input and `max_tokens` of output at the model's price."""
    turn_workflow_id: str = ""
    """The turn that asks: told by signal when a cap changes, if it was refused."""


class ReserveResult(ContractModel):
    """Whether the reservation was granted; if not, why (naming the tenant, cap and spend)."""

    granted: bool
    """True: the call may be made."""
    message: str = ""
    """Why not."""


class SettleInput(ContractModel):
    """The ledger's `settle` update: the call is done and cost `cost_usd` (0 if never made)."""

    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1)
    """The key the call reserved under."""
    cost_usd: float = Field(ge=0, allow_inf_nan=False)
    """What the call actually cost."""


class TenantSpend(ContractModel):
    """A tenant as its ledger sees it now (the `spend` query, `turnkeeper tenants show`)."""

    tenant: str
    """The tenant."""
    caps: TenantCaps
    """Its caps."""
    day: str
    """The current UTC day, `YYYY-MM-DD`."""
    spent_day_usd: float
    """Settled spend of that day."""
    month: str
    """The current UTC month, `YYYY-MM`."""
    spent_month_usd: float
    """Settled spend of that month."""
    reserved_usd: float
    """Reserved by model calls in flight."""
    in_flight: int
    """Model calls in flight (reservations not yet settled)."""
    as_of: datetime
    """When the ledger last changed or was read."""
