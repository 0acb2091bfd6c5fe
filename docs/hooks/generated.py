"""MkDocs hook: the parts of the site that must follow the code are written at build time.

A page holds a marker line, `<!-- generated: NAME -->`, where a generated section goes:
`code-map` (every module of the packages with the first sentence of its docstring, read from the
source tree that pyproject.toml maps onto `turnkeeper.…`) and `models` (the JSON Schema of each
public pydantic model in `turnkeeper.__all__`, fields described by the models' own docstrings).
Written by hand, either would fall behind the next module moved or field added; generated, the
build says what the code says. Problems are logged as warnings, which `mkdocs build --strict`
turns into a failed build.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

log = logging.getLogger("mkdocs.hooks.generated")

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    def replace(marker: re.Match[str]) -> str:
        generator = GENERATORS.get(marker.group(1))
        if generator is None:
            log.warning("%s: no generator named %r", page.file.src_path, marker.group(1))
            return marker.group(0)
        return generator()

    return MARKER.sub(replace, markdown)


# ---- the code map ----------------------------------------------------------------------------


def _package_roots() -> dict[str, Path]:
    """`turnkeeper.contracts` -> contracts/, … as pyproject.toml's package-dir maps them."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    return {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}


def _summary(path: Path) -> str | None:
    """The first sentence of a module's docstring, its wrapped lines joined."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        return None
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    sentence = re.match(r"(.+?[.!?])(?:\s|$)", paragraph)
    return (sentence.group(1) if sentence else paragraph).replace("|", "\\|")


def _modules(root: Path) -> Iterator[Path]:
    """The modules of one top-level package, each folder's `__init__` before its modules."""
    for folder in sorted({root, *(init.parent for init in root.rglob("__init__.py"))}):
        if not (folder / "__init__.py").exists():
            continue
        yield folder / "__init__.py"
        yield from sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")


def code_map() -> str:
    lines: list[str] = []
    roots = _package_roots()
    for package in sorted(roots, key=lambda name: (name != "turnkeeper", name)):
        root = roots[package]
        lines += [f"### `{package}` (`{root.relative_to(ROOT)}/`)", ""]
        lines += ["| module | what it is |", "|---|---|"]
        for path in _modules(root):
            relative = path.relative_to(root).with_suffix("")
            name = ".".join([package, *relative.parts]).removesuffix(".__init__")
            summary = _summary(path)
            if summary is None:
                if path.read_text(encoding="utf-8").strip():
                    log.warning("code map: %s has no docstring", path.relative_to(ROOT))
                continue
            lines.append(f"| `{name}` | {summary} |")
        lines.append("")
    worker = ROOT / "worker.py"
    lines += ["### `worker.py`", "", _summary(worker) or "", ""]
    return "\n".join(lines)


# ---- the public models -----------------------------------------------------------------------


# The request, what it gives back and what a running turn answers, before the rest (in the
# order of `turnkeeper.__all__`): the order a reader needs them in.
FIRST = ("TurnRequest", "AgentReport", "TurnStatus", "TurnEvent")
CONSTRAINTS = {
    "minimum": "≥ {}",
    "exclusiveMinimum": "> {}",
    "maximum": "≤ {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} character(s)",
    "maxLength": "at most {} characters",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "pattern": "matching `{}`",
}


def _public_models() -> dict[str, type[BaseModel]]:
    import turnkeeper

    found = {}
    for name in turnkeeper.__all__:
        value = getattr(turnkeeper, name)
        if isinstance(value, type) and issubclass(value, BaseModel):
            found[name] = value
    first = [name for name in FIRST if name in found]
    return {name: found[name] for name in [*first, *(n for n in found if n not in first)]}


class _FactoryDefaults(GenerateJsonSchema):
    """JSON Schema with a default factory's value as the field's `default`: pydantic leaves
    those out, and a reader wants to know that `tools` defaults to `[]`."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            kept = {key: value for key, value in schema.items() if key != "default_factory"}
            schema = cast(core_schema.WithDefaultSchema, {**kept, "default": factory()})
        return super().default_schema(schema)


def _anchor(name: str) -> str:
    return re.sub(r"[^\w-]", "", name.lower())


def _prose(docstring: str) -> str:
    """A model's docstring without its Google-style sections (`Attributes:` …): the table
    beside it gives every field's description."""
    section = re.search(r"^(?:Attributes|Args|Example|Examples|Note):\s*$", docstring, re.MULTILINE)
    return (docstring[: section.start()] if section else docstring).strip()


class _Renderer:
    """Markdown of a set of JSON Schemas whose `$defs` are shared: each definition is shown
    once, under the public name when it has one, and every reference links to it."""

    def __init__(self, models: dict[str, type[BaseModel]]) -> None:
        self.schemas = {
            name: model.model_json_schema(schema_generator=_FactoryDefaults)
            for name, model in models.items()
        }
        # A definition is keyed by the class's name; the public name may differ (Agent).
        self.public = {model.__name__: name for name, model in models.items()}
        self.definitions: dict[str, dict[str, Any]] = {}
        for name, schema in self.schemas.items():
            self.definitions.update(schema.get("$defs", {}))
            # A recursive model (an agent's sub-agents hold agents) is a bare reference to its
            # own entry of $defs, which the line above has added already.
            if "$ref" not in schema:
                self.definitions[models[name].__name__] = schema

    def title(self, definition: str) -> str:
        return self.public.get(definition, definition)

    def type_of(self, schema: dict[str, Any]) -> str:
        if "$ref" in schema:
            definition = schema["$ref"].rsplit("/", 1)[-1]
            if not self._is_model(definition):  # a named alias such as JsonValue: said inline
                return self.type_of(self.definitions[definition])
            name = self.title(definition)
            return f"[{name}](#{_anchor(name)})"
        if "const" in schema:
            return f"`{json.dumps(schema['const'])}`"
        if "enum" in schema:
            return " \\| ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
        for combined in ("anyOf", "oneOf", "allOf"):
            if combined in schema:
                return " or ".join(self.type_of(part) for part in schema[combined])
        kind = schema.get("type")
        if kind == "array":
            described = f"list of {self.type_of(schema.get('items', {}))}"
        elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            described = f"object of {self.type_of(schema['additionalProperties'])}"
        elif isinstance(kind, list):
            described = " or ".join(f"`{part}`" for part in kind)
        else:
            described = f"`{kind}`" if kind else "any JSON"
        limits = [text.format(schema[key]) for key, text in CONSTRAINTS.items() if key in schema]
        return f"{described} ({', '.join(limits)})" if limits else described

    def _is_model(self, definition: str) -> bool:
        return "properties" in self.definitions[definition]

    def table(self, schema: dict[str, Any]) -> list[str]:
        properties = schema.get("properties", {})
        if not properties:
            return []
        required = set(schema.get("required", []))
        rows = ["| field | type | default | description |", "|---|---|---|---|"]
        for field, spec in properties.items():
            default = "required" if field in required else f"`{json.dumps(spec.get('default'))}`"
            description = " ".join(spec.get("description", "").split()).replace("|", "\\|")
            rows.append(f"| `{field}` | {self.type_of(spec)} | {default} | {description} |")
        return [*rows, ""]

    def section(self, heading: str, definition: str) -> list[str]:
        schema = self.definitions[definition]
        lines = [f"{heading} {self.title(definition)}", ""]
        description = _prose(schema.get("description", ""))
        if description:
            lines += [description, ""]
        if "properties" not in schema:
            lines += [f"One of: {self.type_of(schema)}", ""]
        return lines + self.table(schema)

    def render(self) -> str:
        lines: list[str] = []
        for name, schema in self.schemas.items():
            definition = next(key for key, value in self.public.items() if value == name)
            lines += self.section("##", definition)
            whole = json.dumps(schema, indent=2)
            lines += [f'??? note "The JSON Schema of {name}"', "", "    ```json"]
            lines += [f"    {line}" for line in whole.splitlines()]
            lines += ["    ```", ""]
        nested = sorted(d for d in self.definitions if d not in self.public and self._is_model(d))
        if nested:
            lines += ["## Nested models", ""]
            lines += ["The models the public ones hold, by reference.", ""]
        for definition in nested:
            lines += self.section("###", definition)
        return "\n".join(lines)


def models() -> str:
    return _Renderer(_public_models()).render()


GENERATORS: dict[str, Callable[[], str]] = {"code-map": code_map, "models": models}
