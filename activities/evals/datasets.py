"""pydantic-evals dataset files (YAML or JSON), loaded through the package itself, into the cases
an evaluation run carries; and one case back into a pydantic-evals `Case` where it is scored.

A dataset names scorers by class name: pydantic-evals' built-in ones, the turn-fact ones
(`turn_facts.py`) and the worker's `@turnkeeper.evaluator` functions. The console does not have
the worker's functions, so it loads names it does not know as stand-ins; the run's first step
asks the worker for them, before any case starts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Evaluator, EvaluatorSpec
from turnkeeper.activities.evals.registered import named_evaluator
from turnkeeper.activities.evals.turn_facts import TURN_FACT_EVALUATORS
from turnkeeper.contracts.evals import EvalCase

Format = Literal["yaml", "json"]


class DatasetError(ValueError):
    """A dataset file that cannot be loaded; the message names the file, line and field."""


def builtin_names() -> set[str]:
    """The scorers every worker has: pydantic-evals' defaults and the turn-fact ones."""
    from pydantic_evals.dataset import DEFAULT_EVALUATORS

    types = (*DEFAULT_EVALUATORS, *TURN_FACT_EVALUATORS)
    return {t.get_serialization_name() for t in types}


def spec_name(spec: Any) -> str:
    """The scorer an evaluator entry of a dataset file names (`Name`, `{Name: args}`)."""
    return EvaluatorSpec.model_validate(spec).name


def load_dataset(path: Path) -> tuple[str, list[EvalCase]]:
    """The dataset's name and its cases, each with the dataset's evaluators then its own.

    Raises:
        DatasetError: the file cannot be read, is not YAML/JSON, or does not fit the format.
    """
    fmt: Format = "json" if path.suffix.lower() == ".json" else "yaml"
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as err:
        raise DatasetError(f"{path}: cannot read it: {err}") from None
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}:{err.lineno}: not JSON: {err.msg}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise DatasetError(f"{path}{line}: not YAML: {getattr(err, 'problem', err)}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cases", []), list):
        raise DatasetError(f"{path}:1: a dataset is a mapping with a list of `cases`")
    stand_ins = [named_evaluator(n, None) for n in _named(raw) - builtin_names()]
    try:
        dataset = Dataset[Any, Any, Any].from_text(
            text,
            fmt=fmt,
            custom_evaluator_types=[*TURN_FACT_EVALUATORS, *stand_ins],
            default_name=path.stem,
        )
    except ValidationError as err:
        first = err.errors()[0]
        loc = [str(part) for part in first["loc"]]
        line = _line_of(text, first["loc"])
        raise DatasetError(
            f"{path}:{line}: field {'.'.join(loc) or '(top)'}: {first['msg']}"
        ) from None
    except ExceptionGroup as group:  # an evaluator's arguments do not fit it
        raise DatasetError(f"{path}: {group.exceptions[0]}") from None
    except ValueError as err:
        raise DatasetError(f"{path}: {err}") from None
    if not dataset.cases:
        raise DatasetError(f"{path}: the dataset has no cases")
    shared = list(raw.get("evaluators") or [])
    cases = [
        EvalCase(
            name=case.name or f"case-{n}",
            inputs=case.inputs,
            expected_output=case.expected_output,
            metadata=case.metadata,
            evaluators=[*shared, *(raw["cases"][n - 1].get("evaluators") or [])],
        )
        for n, case in enumerate(dataset.cases, start=1)
    ]
    return dataset.name, cases


def _named(raw: dict[str, Any]) -> set[str]:
    specs = [*(raw.get("evaluators") or [])]
    for case in raw.get("cases") or []:
        if isinstance(case, dict):
            specs += case.get("evaluators") or []
    names: set[str] = set()
    for spec in specs:
        try:
            names.add(spec_name(spec))
        except ValidationError:
            continue  # pydantic-evals names it, with its place, when it loads the file
    return names


def _line_of(text: str, loc: Sequence[int | str]) -> int:
    """The line where the value at `loc` starts (YAML's parser reads JSON too); the closest
    enclosing value's when `loc` names a field that is missing."""
    try:
        node: Any = yaml.compose(text)
    except yaml.YAMLError:
        return 1
    line = 1
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        node = _child(node, part)
    return node.start_mark.line + 1 if node is not None else line


def _child(node: Any, part: int | str) -> Any:
    if isinstance(node, yaml.MappingNode):
        return next((v for k, v in node.value if k.value == str(part)), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part]
    return None


def as_pydantic_case(
    dataset: str, case: EvalCase, types: Sequence[type[Evaluator]]
) -> Case[Any, Any, Any]:
    """`case` back as pydantic-evals loads it, its evaluators built from `types`.

    Raises:
        ValueError: a scorer is not among `types` (pydantic-evals names it and the choices).
    """
    data = {
        "name": dataset,
        "cases": [
            {
                "name": case.name,
                "inputs": case.inputs,
                "expected_output": case.expected_output,
                "metadata": case.metadata,
                "evaluators": case.evaluators,
            }
        ],
    }
    loaded = Dataset[Any, Any, Any].from_dict(data, custom_evaluator_types=types)
    return loaded.cases[0]
