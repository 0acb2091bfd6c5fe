"""What the turn's and the session's handlers make of their payloads. Handlers take their input
as a `RawValue` (so that a payload of the wrong shape, or one that arrived unencrypted, reaches
them instead of failing workflow tasks forever); here it is decoded and validated, and a payload
that does not fit becomes the refusal each kind of handler gives: a failed start, an ignored
and logged signal, a rejected update."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError
    from turnkeeper.contracts.request_checks import ENDPOINT_PRICES_PATCH, request_problem
    from turnkeeper.contracts.signals import ApproveInput
    from turnkeeper.contracts.turn import TurnRequest
    from turnkeeper.workflows.failures import describe, invalid_request, unencrypted_request
    from turnkeeper.workflows.inputs import plaintext
    from turnkeeper.workflows.inputs.placement import RUNTIME_IDS_PATCH, placement_problem
    from turnkeeper.workflows.inputs.plaintext import decoded

M = TypeVar("M", bound=BaseModel)


# How an update refuses an input that does not fit, given the message that names the field.
Refusal = Callable[[str], Exception]


def parsed(raw: RawValue | Any, model: type[M], what: str, refusal: Refusal = ValueError) -> M:
    """`raw` as `model`, for an update and its validator; raises `refusal("invalid {what}: …")`
    when it does not fit."""
    return validated(model, decoded(raw), what, refusal)


def validated(model: type[M], payload: Any, what: str, refusal: Refusal = ValueError) -> M:
    """`payload` (JSON) as `model`; raises `refusal("invalid {what}: …")` when it does not
    fit."""
    try:
        return model.model_validate(payload)
    except ValidationError as err:
        raise refusal(f"invalid {what}: {describe(err)}") from None


def update_input(
    raw: RawValue | Any, model: type[M], what: str, update: str, refusal: Refusal = ValueError
) -> M:
    """For an update's validator: `raw` as `model`, rejected first when it arrived unencrypted
    (no patch needed: a validator runs only for a new update, never on replay)."""
    plaintext.reject_unencrypted(raw, f"the {update} update")
    return parsed(raw, model, what, refusal)


def carried(value: Any, model: type[M]) -> M | None:
    """What the previous run carried across continue-as-new, as `model`; None in a first run."""
    value = decoded(value)
    return None if value is None else model.model_validate(value)


def signal_input(raw: RawValue | Any, model: type[M], signal: str) -> M | None:
    """A signal's input as `model`, or None once it is logged as ignored: a signal has no
    caller to refuse."""
    try:
        return model.model_validate(decoded(raw))
    except (ValidationError, ValueError, TypeError) as err:
        workflow.logger.warning("%s signal ignored: invalid payload: %s", signal, err)
        return None


def payload_or_none(value: RawValue | Any) -> Any:
    """`value` as JSON, for a refusal that names what it can; None where even decoding fails."""
    try:
        return decoded(value)
    except Exception:
        return None


class Sender(NamedTuple):
    """Whom a refused approval signal came as: what the turn lists its refusal under."""

    call_id: str
    approver: str


def sender_of(payload: Any) -> Sender:
    """The call id and approver a signal's payload names, whatever else is wrong with it."""
    fields = payload if isinstance(payload, dict) else {}
    return Sender(str(fields.get("call_id", "")), str(fields.get("approver", "")))


def unencrypted_sender(raw: RawValue) -> Sender | None:
    """Whom a signal came as that arrived unencrypted where the worker requires encryption, to
    be ignored (`plaintext.py` says when a history lets it through); None for one to read."""
    if not plaintext.refused(raw):
        return None
    return sender_of(payload_or_none(raw))


def approve_input(raw: RawValue) -> ApproveInput | tuple[Sender, str]:
    """The `approve` signal's decision, or whom it came as and why it does not fit."""
    payload: Any = None
    try:
        payload = decoded(raw)
        return ApproveInput.model_validate(payload)
    except ValidationError as err:
        problem = f"invalid payload: {describe(err)}"
    except (ValueError, TypeError) as err:
        problem = f"invalid payload: {err}"
    return sender_of(payload), problem


def _endpoints_may_price() -> bool:
    return workflow.patched(ENDPOINT_PRICES_PATCH)


def turn_request(raw: RawValue | Any, *, first_run: bool = False) -> TurnRequest:
    """The turn's request, checked before anything else hears of it. Raises the failure of a
    request that never becomes a turn: unencrypted where the worker requires encryption, not a
    TurnRequest, asking for what cannot be done (`request_checks.py`), or, in the turn's
    `first_run` (its workflow's start event says where it runs), started where a turn may not
    run (`inputs/placement.py`)."""
    if plaintext.refused(raw):
        raise unencrypted_request(payload_or_none(raw))
    payload = decoded(raw)
    try:
        request = TurnRequest.model_validate(payload)
    except ValidationError as err:
        raise invalid_request(payload, describe(err)) from None
    problem = request_problem(request, endpoints_may_price=_endpoints_may_price)
    if problem:
        raise invalid_request(payload, problem)
    if first_run:
        info = workflow.info()
        placed = placement_problem(request, info.workflow_id, info.parent)
        # Asked only for a turn that fails here: a valid turn's history gains no marker.
        if placed and workflow.patched(RUNTIME_IDS_PATCH):
            raise invalid_request(payload, placed)
    return request
