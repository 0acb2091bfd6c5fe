"""One case × model × repetition of an evaluation run: its turn's id and request. Pure: the
workflow builds both from its input, so a replay builds the same ones."""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

from pydantic import ValidationError
from turnkeeper.contracts.evals import EvalRunInput
from turnkeeper.contracts.request_checks import request_problem
from turnkeeper.contracts.turn import ParentTurn, TurnRequest

# What a case's part of its turn id keeps of the case's and the model's names: a turn id's own
# characters (a case named "refund / EU" becomes "refund-EU"), cut short, since the id also
# carries both indexes, which alone make it unique.
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._:@-]+")
_NAME_CHARS: Final = 40
# Fields a case's inputs may not set: the caller's identity and the runtime's placement.
_RUNTIME_FIELDS: Final = ("tenant", "parent")


class Unit(NamedTuple):
    """Which case, model and repetition (0-based indexes into the run's input)."""

    case: int
    model: int
    repetition: int


def unit_at(run: EvalRunInput, index: int) -> Unit:
    """The `index`-th unit in the order the run starts them: every case on every model, then
    the next repetition, so an early look at the results covers every case once."""
    per_repetition = len(run.cases) * len(run.models)
    repetition, rest = divmod(index, per_repetition)
    case, model = divmod(rest, len(run.models))
    return Unit(case, model, repetition)


def total_units(run: EvalRunInput) -> int:
    return len(run.cases) * len(run.models) * run.repeat


def child_id(run_id: str, run: EvalRunInput, unit: Unit) -> str:
    """`<run id>/<case n>.<case name>-<model n>.<model>-<repetition>`: nested under the run
    (an id with '/' only its parent may start), unique by the indexes, readable by the names."""
    case = _safe(run.cases[unit.case].name)
    model = _safe(run.models[unit.model])
    return f"{run_id}/{unit.case + 1}.{case}-{unit.model + 1}.{model}-{unit.repetition + 1}"


def _safe(name: str) -> str:
    return _UNSAFE.sub("-", name).strip("-")[:_NAME_CHARS] or "x"


def case_request(
    run_id: str, run: EvalRunInput, unit: Unit, left_usd: float | None
) -> TurnRequest | str:
    """The case's turn request, or why it is invalid (one sentence). The agent file's request,
    with the case's inputs laid over it (the task text, or a partial `TurnRequest`), the model,
    the caller's tenant, and a cost budget no larger than what the run has left."""
    case = run.cases[unit.case]
    base: dict[str, Any] = dict(run.request)
    if "agent" not in base:
        base = {"agent": base}
    inputs = case.inputs
    overlay: dict[str, Any] = inputs if isinstance(inputs, dict) else {"task": {"input": inputs}}
    if not isinstance(inputs, dict | str):
        return f"inputs: must be the task text or a partial TurnRequest, not {inputs!r}"
    merged = _merged(base, overlay)
    for field in _RUNTIME_FIELDS:
        merged.pop(field, None)
    merged["agent"] = {**merged.get("agent", {}), "model": run.models[unit.model]}
    task = dict(merged.get("task") or {})
    task.setdefault("id", f"eval-{_safe(case.name)}")
    if left_usd is not None:
        constraints = dict(task.get("constraints") or {})
        own = constraints.get("cost_budget_usd")
        constraints["cost_budget_usd"] = left_usd if own is None else min(own, left_usd)
        task["constraints"] = constraints
    merged["task"] = task
    merged["tenant"] = run.tenant
    merged["parent"] = ParentTurn(workflow_id=run_id, call_id=f"case-{unit.case + 1}", depth=1)
    try:
        request = TurnRequest.model_validate(merged)
    except ValidationError as err:
        first = err.errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return request_problem(request) or request


def _merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """`overlay` laid over `base`: mappings merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged
