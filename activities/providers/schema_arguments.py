"""Arguments for a tool, made from its JSON Schema alone: what the offline `demo:tool-caller`
model sends each tool it is offered.

The same schema always gives the same arguments (no randomness, no clock), so a model call that
is retried or replayed answers alike and a test can say what a tool receives. A value the schema
suggests wins (`const`, `default`, the first of `examples`, the first of `enum`); otherwise a
plain value of the type, within the schema's bounds: `"example"` for a string (or a fixed value
of its `format`), 1 for a number, `true` for a boolean, one item for an array, and an object's
required properties (optional ones are left out, as a careful caller would). A `pattern` is not
followed: a tool that checks one answers with its own error, which the model reports.

Hand-written rather than a library's: the schema-to-data generators on PyPI (hypothesis-jsonschema
and its kin) draw random values, and the point here is one fixed, readable value per schema.
"""

from __future__ import annotations

import math
from typing import Final

from pydantic import JsonValue

# Deeper than this a self-referring schema (a tree node holding nodes) stops with null.
MAX_DEPTH: Final = 8
STRING: Final = "example"
# A fixed, valid value per string `format` that JSON Schema names.
FORMATS: Final[dict[str, str]] = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
}

Schema = dict[str, JsonValue]


def arguments_for(schema: Schema) -> dict[str, JsonValue]:
    """The arguments a tool whose input is `schema` receives: an object of its required
    properties (an input schema that is not an object gives `{}`)."""
    value = _value(schema, schema, 0)
    return value if isinstance(value, dict) else {}


def example_value(schema: Schema) -> JsonValue:
    """A value that fits `schema`, by the same rules: what the model answers when the agent
    asks for structured output (`agent.output_schema`)."""
    return _value(schema, schema, 0)


def _value(schema: JsonValue, root: Schema, depth: int) -> JsonValue:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    schema = _resolved(schema, root)
    for suggestion in ("const", "default"):
        if suggestion in schema:
            return schema[suggestion]
    for listed in ("examples", "enum"):
        values = schema.get(listed)
        if isinstance(values, list) and values:
            return values[0]
    choice = _first_alternative(schema)
    if choice is not None:
        return _value(choice, root, depth + 1)
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, root, depth)
    if kind == "array":
        return _array(schema, root, depth)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema)


def _resolved(schema: Schema, root: Schema) -> Schema:
    """`schema` with a local `$ref` (`#/$defs/Order`, as pydantic writes nested models) replaced
    by what it points to, and `allOf` parts merged into it."""
    reference = schema.get("$ref")
    if isinstance(reference, str) and (reference == "#" or reference.startswith("#/")):
        target: JsonValue = root
        for part in filter(None, reference[1:].split("/")):
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict):
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    parts = schema.get("allOf")
    if isinstance(parts, list):
        merged: Schema = {k: v for k, v in schema.items() if k != "allOf"}
        for part in parts:
            if isinstance(part, dict):
                merged = {**_resolved(part, root), **merged}
        schema = merged
    return schema


def _first_alternative(schema: Schema) -> JsonValue:
    """The first alternative of `anyOf`/`oneOf` that is not null (`X | None` is
    `anyOf: [X, null]`), or None without alternatives."""
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return next((o for o in options if _type_of(o) != "null"), options[0])
    return None


def _type_of(schema: JsonValue) -> str | None:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _object(schema: Schema, root: Schema, depth: int) -> dict[str, JsonValue]:
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    return {
        name: _value(properties.get(name), root, depth + 1)
        for name in required
        if isinstance(name, str) and name in properties
    }


def _array(schema: Schema, root: Schema, depth: int) -> list[JsonValue]:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        return [_value(item, root, depth + 1) for item in prefix]
    count = max(1, _int(schema.get("minItems"), 1))
    maximum = schema.get("maxItems")
    if isinstance(maximum, int):
        count = min(count, maximum)
    item = _value(schema.get("items", {"type": "string"}), root, depth + 1)
    return [item] * count


def _number(schema: Schema, *, integer: bool) -> int | float:
    value: float = 1
    low, high = schema.get("minimum"), schema.get("maximum")
    low_open, high_open = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    step = 1 if integer else 0.5
    if isinstance(low, int | float) and value < low:
        value = low
    if isinstance(low_open, int | float) and value <= low_open:
        value = low_open + step
    if isinstance(high, int | float) and value > high:
        value = high
    if isinstance(high_open, int | float) and value >= high_open:
        value = high_open - step
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and multiple > 0:
        value = math.ceil(value / multiple) * multiple
    return math.ceil(value) if integer else value


def _string(schema: Schema) -> str:
    form = schema.get("format")
    text = FORMATS.get(form, STRING) if isinstance(form, str) else STRING
    shortest, longest = _int(schema.get("minLength"), 0), schema.get("maxLength")
    text = text.ljust(shortest, "x")
    return text[:longest] if isinstance(longest, int) else text


def _int(value: JsonValue, fallback: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback
