"""Checking a tool call's arguments against the tool's JSON schema, before the call is made.

Called from workflow code, so everything here is pure and deterministic: no clock, no I/O, no
randomness. jsonschema's default registry fetches remote `$ref`s over HTTP; an empty registry
is passed so that a schema referring outside itself is reported as invalid instead. Format
checking stays off: `"format": "email"` is a hint for the model, not a reason to refuse a call.

Every problem is a sentence the model can act on, naming where in the arguments it is
(`window.start`, `tags[2]`), and the list is sorted so that a replay produces the same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry
from referencing.exceptions import Unresolvable

# A model that sends garbage can produce thousands of errors; a handful is enough to correct.
MAX_PROBLEMS: Final = 10
_VALUE_CHARS: Final = 60  # longest shown value, so a bad 50 KiB `content` is not echoed back
_BRIEF_CHARS: Final = 80
_UNION_KEYWORDS: Final = ("anyOf", "oneOf")
_INVALID_SCHEMA: Final = "the tool's input schema is itself invalid"

_Problem = tuple[str, str]  # (where, sentence): sorted by where first, then by the sentence


def validation_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with `arguments` for a tool whose input schema is `schema`.

    Returns:
        Sentences such as `argument 'path': 'x' is not of type 'integer'`, `missing required
        argument 'path'` or `unexpected argument 'foo' (allowed: path)`, sorted; at most
        `MAX_PROBLEMS` plus one line counting the rest. Empty when the arguments fit. A schema
        that is itself invalid gives one problem saying so, never an exception.
    """
    try:
        validator = _validator(_canonical(schema))
        found = sorted(set(_problems(validator.iter_errors(arguments))))
    except SchemaError as err:
        where = _path(err.absolute_path)
        return [_invalid_schema(f"at {where!r}: {err.message}" if where else err.message)]
    except Unresolvable as err:
        return [_invalid_schema(f"it refers to {_reference(err)!r}, which is not in it")]
    except Exception as err:  # a recursive schema, a bad regex, a value that is not JSON...
        return [_invalid_schema(f"{type(err).__name__}: {err}")]
    sentences = [sentence for _, sentence in found]
    if len(sentences) > MAX_PROBLEMS:
        rest = len(sentences) - MAX_PROBLEMS
        sentences = [*sentences[:MAX_PROBLEMS], f"and {rest} more problems of the same kinds"]
    return sentences


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """The one problem of a schema that is itself invalid, or None: lets the caller tell a
    tool's fault (do not charge the model a correction) from the model's."""
    problems = validation_problems(schema, {})
    if len(problems) == 1 and problems[0].startswith(_INVALID_SCHEMA):
        return problems[0]
    return None


def corrective_message(
    tool: str,
    problems: list[str],
    corrections_left: int,
    schema: Mapping[str, Any] | None = None,
) -> str:
    """The `is_error` tool result that sends a call with bad arguments back to the model.

    Args:
        tool: the tool the model called.
        problems: from `validation_problems`.
        corrections_left: how many more such calls the turn tolerates; at 0 the next one ends it.
        schema: the tool's input schema, summarised so the model need not look it up again.
    """
    lines = [f"The call to {tool} was not run: its arguments do not fit the tool's input schema."]
    lines += [f"- {problem}" for problem in problems]
    expected = _expected_arguments(schema) if schema is not None else None
    if expected is not None:
        lines.append(f"Expected arguments: {expected}.")
    if corrections_left > 0:
        plural = "" if corrections_left == 1 else "s"
        lines.append(
            f"Correct the arguments and call {tool} again "
            f"({corrections_left} correction{plural} left in this turn)."
        )
    else:
        lines.append(
            f"No corrections are left in this turn: another call whose arguments do not fit "
            f"ends the turn with an error. Call {tool} again only with arguments that fit."
        )
    return "\n".join(lines)


@lru_cache(maxsize=256)
def _validator(canonical_schema: str) -> Draft202012Validator:
    # Cached by the schema's JSON text: a turn checks the same few schemas every iteration,
    # and checking a schema against the metaschema costs more than checking the arguments.
    schema = json.loads(canonical_schema)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=Registry(), format_checker=None)


def _canonical(schema: Mapping[str, Any]) -> str:
    # Key order is kept: it is the order in which the expected arguments are listed.
    return json.dumps(schema, separators=(",", ":"))


def _reference(err: Unresolvable) -> str:
    ref = str(getattr(err, "ref", err))
    return "#" + ref if ref.startswith("/") else ref  # a JSON pointer reports itself without '#'


def _invalid_schema(reason: str) -> str:
    return (
        f"{_INVALID_SCHEMA} ({_clip(reason, 200)}), so no arguments can be checked against it; "
        "this is a fault of the tool, not of your arguments"
    )


def _problems(errors: Iterable[ValidationError]) -> Iterable[_Problem]:
    for error in errors:
        yield from _describe(error)


def _describe(error: ValidationError) -> Iterable[_Problem]:
    keyword = error.validator
    if keyword == "required":
        yield from _missing(error)
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        yield from _unexpected(error)
    elif keyword in _UNION_KEYWORDS and (branch := _matching_branch(error)) is not None:
        # `int | None` given "x": the errors of the one alternative of the right type say more
        # than "'x' is not valid under any of the given schemas".
        yield from _problems(branch)
    else:
        where = _path(error.absolute_path)
        yield where, _located(where, _message(error))


def _missing(error: ValidationError) -> Iterable[_Problem]:
    instance = error.instance if isinstance(error.instance, Mapping) else {}
    for name in error.validator_value:
        if name not in instance:
            where = _path([*error.absolute_path, name])
            yield where, f"missing required argument {where!r}"


def _unexpected(error: ValidationError) -> Iterable[_Problem]:
    instance = error.instance if isinstance(error.instance, Mapping) else {}
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    allowed = ", ".join(known) or "none"
    for name in instance:
        if name not in known and not any(re.search(pattern, name) for pattern in patterns):
            where = _path([*error.absolute_path, name])
            yield where, f"unexpected argument {where!r} (allowed: {allowed})"


def _matching_branch(error: ValidationError) -> list[ValidationError] | None:
    """The errors of the single alternative whose type fits the value, if there is one."""
    by_branch: dict[int, list[ValidationError]] = {}
    for sub in error.context or []:
        by_branch.setdefault(sub.schema_path[0], []).append(sub)
    fitting = [
        errors
        for errors in by_branch.values()
        if not any(sub.validator == "type" and not sub.path for sub in errors)
    ]
    return fitting[0] if len(fitting) == 1 else None


def _message(error: ValidationError) -> str:
    message = error.message
    shown = repr(error.instance)
    # jsonschema starts most messages with the repr of the value; a long one is cut short.
    if message.startswith(shown):
        message = _clip(shown, _VALUE_CHARS) + message[len(shown) :]
    if error.validator in _UNION_KEYWORDS and isinstance(error.validator_value, list):
        forms = " | ".join(_brief(sub) for sub in error.validator_value)
        message += f" (expected {_clip(forms, _BRIEF_CHARS)})"
    return message


def _located(where: str, message: str) -> str:
    return f"argument {where!r}: {message}" if where else f"the arguments: {message}"


def _path(parts: Sequence[str | int] | Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _expected_arguments(schema: Mapping[str, Any]) -> str | None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    if not properties:
        return "none"
    required = schema.get("required", [])
    return "; ".join(
        f"{name} ({_brief(sub)}{', required' if name in required else ''})"
        for name, sub in properties.items()
    )


def _brief(schema: Any) -> str:
    """A few words for a schema: `string`, `array of integer`, `Window | null`."""
    if not isinstance(schema, Mapping):
        return "any value" if schema is True else "nothing"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    for keyword in _UNION_KEYWORDS:
        if isinstance(schema.get(keyword), list):
            return " | ".join(_brief(sub) for sub in schema[keyword])
    if "enum" in schema:
        return "one of " + _clip(json.dumps(schema["enum"]), _BRIEF_CHARS)
    if "const" in schema:
        return "exactly " + _clip(json.dumps(schema["const"]), _BRIEF_CHARS)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and "items" in schema:
        return f"array of {_brief(schema['items'])}"
    return str(kind) if kind else "any value"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def value_problems(schema: Mapping[str, Any], value: Any) -> list[str]:
    """What is wrong with `value` (any JSON value, e.g. a structured answer) for `schema`, as
    sentences naming where; empty when it fits."""
    try:
        validator = _validator(_canonical(schema))
        errors = list(validator.iter_errors(value))
    except Exception as err:  # an invalid schema: checked at the start of the turn already
        return [_invalid_schema(f"{type(err).__name__}: {err}")]
    sentences = sorted(
        f"at {_path(error.absolute_path)!r}: {_clip(error.message, 200)}"
        if error.absolute_path
        else _clip(error.message, 200)
        for error in errors
    )
    return sentences[:MAX_PROBLEMS]
