"""The static figures of `bench.house`: the project's import graph as grimp reads it, the
files the turn's loop names and reaches, the import arrows inside `turnkeeper.workflows`, and the
shape of `Turn`. Every module is found by a search (the class it defines, the package it lies
in), never by its path, so the figures follow modules that move between rooms.

grimp finds a package's modules by walking its one folder, and the checkout maps `workflows/`
to `turnkeeper.workflows`: the graph is built over a copy laid out as the wheel lays it out
(`tests.support.package_lines.installed_layout`), before anything imports `turnkeeper`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = "turnkeeper.workflows"
CONTRACTS = "turnkeeper.contracts"
LOOP_CLASS = "AgentTurnWorkflow"
TURN_CLASS = "Turn"
WATCHER_PACKAGE = "observation"


@dataclass
class Graph:
    """The project's import graph and the source text of each module."""

    imports: dict[str, set[str]]
    texts: dict[str, str]


def import_graph() -> Graph:
    """grimp's graph of `turnkeeper` over a wheel-shaped copy of the sources."""
    import grimp

    from tests.support.package_lines import installed_layout

    if "turnkeeper" in sys.modules:
        # grimp finds the package through importlib, which would answer with the loaded one.
        raise RuntimeError("build the import graph before anything imports turnkeeper")
    with tempfile.TemporaryDirectory() as folder:
        layout = installed_layout(Path(folder))
        sys.path.insert(0, str(layout))
        try:
            graph = grimp.build_graph("turnkeeper", cache_dir=None)
        finally:
            sys.path.remove(str(layout))
        texts = {
            module: _source_in(layout, module).read_text(encoding="utf-8")
            for module in graph.modules
        }
    imports = {module: set(graph.find_modules_directly_imported_by(module)) for module in texts}
    return Graph(imports=imports, texts=texts)


def _source_in(layout: Path, module: str) -> Path:
    base = layout / Path(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@contextmanager
def checkout_importable() -> Iterator[None]:
    """Makes `import turnkeeper` load this checkout, whichever checkout the interpreter's
    editable install points at: a folder laid out as the wheel, of links into the checkout, goes
    first on sys.path (setuptools' editable finder comes after the path)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dirs: dict[str, str] = mapping["tool"]["setuptools"]["package-dir"]
    with tempfile.TemporaryDirectory() as folder:
        for name, source in sorted(package_dirs.items(), key=lambda item: item[0].count(".")):
            target = Path(folder, *name.split("."))
            if "." not in name:
                target.mkdir()
                for entry in (ROOT / source).iterdir():
                    (target / entry.name).symlink_to(entry)
            else:
                target.symlink_to(ROOT / source)
        sys.path.insert(0, folder)
        try:
            import turnkeeper

            if not str(turnkeeper.__file__).startswith(folder):
                raise RuntimeError(f"turnkeeper loaded from {turnkeeper.__file__}, not {ROOT}")
            yield
        finally:
            sys.path.remove(folder)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _defines(text: str, class_name: str) -> bool:
    tree = ast.parse(text)
    return any(isinstance(node, ast.ClassDef) and node.name == class_name for node in tree.body)


def defining_module(graph: Graph, class_name: str) -> str:
    """The one module of `turnkeeper.workflows` whose top level defines `class_name`."""
    found = [
        module
        for module in sorted(graph.texts)
        if _within(module, WORKFLOWS) and _defines(graph.texts[module], class_name)
    ]
    if len(found) != 1:
        raise RuntimeError(f"expected one module defining {class_name}, found {found}")
    return found[0]


def _is_watcher(module: str) -> bool:
    return WATCHER_PACKAGE in module.removeprefix(WORKFLOWS).split(".")


def loop_named(graph: Graph) -> dict[str, int]:
    """Module -> lines, for the loop's module and the workflow modules it imports directly
    (through a package that re-exports: its `__init__` and what it imports from inside it)."""
    start = defining_module(graph, LOOP_CLASS)
    named: set[str] = {start}
    todo = [module for module in graph.imports[start] if _within(module, WORKFLOWS)]
    while todo:
        module = todo.pop()
        if module in named:
            continue
        named.add(module)
        if _is_package(graph, module):
            todo.extend(inner for inner in graph.imports[module] if _within(inner, module))
    return _lines_of(graph, named)


def loop_reached(graph: Graph) -> dict[str, int]:
    """Module -> lines, for the loop's module and all it reaches in workflows and contracts,
    less the workflows' observation package."""

    def counted(module: str) -> bool:
        in_rooms = _within(module, WORKFLOWS) or _within(module, CONTRACTS)
        return in_rooms and not _is_watcher(module)

    start = defining_module(graph, LOOP_CLASS)
    reached, todo = {start}, [start]
    while todo:
        for imported in graph.imports[todo.pop()]:
            if imported not in reached and counted(imported):
                reached.add(imported)
                todo.append(imported)
    return _lines_of(graph, reached)


def _is_package(graph: Graph, module: str) -> bool:
    return any(other.startswith(module + ".") for other in graph.texts)


def _lines_of(graph: Graph, modules: set[str]) -> dict[str, int]:
    return {module: len(graph.texts[module].splitlines()) for module in sorted(modules)}


def workflow_arrows(graph: Graph) -> tuple[int, int]:
    """Distinct imports between modules of `turnkeeper.workflows`; and between its top-level
    modules and sub-packages, each sub-package counted as one."""
    pairs = {
        (module, target)
        for module, imported in graph.imports.items()
        if _within(module, WORKFLOWS)
        for target in imported
        if _within(target, WORKFLOWS)
    }
    folded = {(_top(module), _top(target)) for module, target in pairs}
    return len(pairs), sum(1 for module, target in folded if module != target)


def _top(module: str) -> str:
    """`turnkeeper.workflows.x.y` -> `turnkeeper.workflows.x`."""
    return ".".join(module.split(".")[: WORKFLOWS.count(".") + 2])


@dataclass
class TurnShape:
    """What the class `Turn` holds."""

    module: str
    fields: int
    methods: int
    lines: int
    module_lines: int  # of the whole module that defines it
    classes: list[str]
    parts: dict[str, int] = field(default_factory=dict)  # field -> fields of its part


def turn_shape(module: str) -> TurnShape:
    """Fields (inherited too), methods and lines of `Turn` and the project's bases of it."""
    from pydantic import BaseModel

    loaded = importlib.import_module(module)
    turn = getattr(loaded, TURN_CLASS)
    own = [cls for cls in turn.__mro__ if cls.__module__.startswith("turnkeeper.")]
    methods = lines = 0
    for cls in own:
        node = _class_node(cls)
        methods += sum(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in node.body
        )
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        lines += (node.end_lineno or node.lineno) - first + 1
    parts = {
        name: len(info.annotation.model_fields)
        for name, info in turn.model_fields.items()
        if isinstance(info.annotation, type)
        and issubclass(info.annotation, BaseModel)
        and info.annotation.__module__.startswith(WORKFLOWS)
    }
    return TurnShape(
        module=module,
        fields=len(turn.model_fields),
        methods=methods,
        lines=lines,
        module_lines=len(inspect.getsource(loaded).splitlines()),
        classes=[f"{cls.__module__}.{cls.__qualname__}" for cls in own],
        parts=parts,
    )


def _class_node(cls: type) -> ast.ClassDef:
    tree = ast.parse(Path(inspect.getsourcefile(cls) or "").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__qualname__:
            return node
    raise RuntimeError(f"no top-level class {cls.__qualname__} in {cls.__module__}")
