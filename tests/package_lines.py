"""The package lines of turnkeeper as import-linter sees them: `python -m tests.package_lines`
prints who imports whom between the layers; tests/test_package_lines.py runs the contracts of
pyproject.toml's `[tool.importlinter]`.

Installed, `contracts/`, `workflows/` and `activities/` are `turnkeeper.contracts|workflows|
activities` (setuptools' package-dir). grimp, the graph builder under import-linter, finds a
package's modules by walking its one folder, so over the checkout it would see `turnkeeper/` alone.
`installed_layout` copies the sources into the layout a wheel has (pyproject's own package-dir
mapping, read from the file), which is what grimp reads; nothing is imported.
"""

from __future__ import annotations

import ast
import shutil
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "turnkeeper"
# The layers of the architecture, lowest first; a module belongs to the first that prefixes it.
SUBPACKAGES = (
    "turnkeeper.contracts",
    "turnkeeper.workflows",
    "turnkeeper.activities",
    "turnkeeper.runtime",
)
# The flat modules of `turnkeeper/` a worker process loads (those `turnkeeper.worker_cli`
# reaches), as against the console and client modules; computed, not listed by hand.
WORKER_ENTRY = "turnkeeper.worker_cli"
WORKER_SIDE = "turnkeeper/* (worker side)"
CONSOLE_SIDE = "turnkeeper/* (console, client)"
SCRIPT = "worker.py"
SIBLINGS = ("turnkeeper.workflows", "turnkeeper.activities")


def installed_layout(dest: Path) -> Path:
    """Copies the package's Python files into `dest` as a wheel lays them out; returns `dest`."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dirs: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    # Parents first, so a mapped subpackage lands inside its parent's copy.
    for name, source in sorted(package_dirs.items(), key=lambda item: item[0].count(".")):
        shutil.copytree(
            ROOT / source,
            dest / Path(*name.split(".")),
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.json", "*.toml"),
            dirs_exist_ok=True,
        )
    return dest


# How low each layer sits: a module may import lower layers; workflows and activities not each
# other. The runtime is the composition root (`turnkeeper.runtime`) with the flat modules of the
# worker process it runs in (settings, connection, worker); the console and client sit above it.
RANK = {
    "turnkeeper.contracts": 0,
    "turnkeeper.workflows": 1,
    "turnkeeper.activities": 1,
    "turnkeeper.runtime": 2,
    WORKER_SIDE: 2,
    CONSOLE_SIDE: 3,
    SCRIPT: 4,
}


def layer_edges(layout: Path) -> tuple[dict[str, set[str]], list[str]]:
    """importer layer -> imported layers over the package copied into `layout`, and each
    module-level import that crosses a line (a layer importing its sibling or one above it)."""
    import grimp

    sys.path.insert(0, str(layout))
    try:
        graph = grimp.build_graph(PACKAGE, cache_dir=None)
    finally:
        sys.path.remove(str(layout))
    worker_side = _flat_modules_reached(graph, WORKER_ENTRY)

    def layer(module: str) -> str:
        for subpackage in SUBPACKAGES:
            if module == subpackage or module.startswith(subpackage + "."):
                return subpackage
        return WORKER_SIDE if module in worker_side else CONSOLE_SIDE

    edges: dict[str, set[str]] = defaultdict(set)
    crossings: list[str] = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            low, high = layer(module), layer(imported)
            if low == high:
                continue
            edges[low].add(high)
            if RANK[low] < RANK[high] or RANK[low] == RANK[high] == RANK[SIBLINGS[0]]:
                crossings.append(f"{module} -> {imported}")
    edges[SCRIPT] = {layer(name) for name in _script_imports(ROOT / SCRIPT)}
    return edges, crossings


def _flat_modules_reached(graph: object, entry: str) -> set[str]:
    reached = {entry} | graph.find_upstream_modules(entry)  # type: ignore[attr-defined]
    return {name for name in reached if not name.startswith(SUBPACKAGES)}


def _script_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] == PACKAGE}


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        edges, crossings = layer_edges(installed_layout(Path(folder)))
    for importer in sorted(edges, key=lambda name: (RANK[name], name)):
        print(f"{importer} -> {', '.join(sorted(edges[importer]))}")
    print(f"imports that cross a line: {len(crossings)}")
    for crossing in crossings:
        print(f"  {crossing}")


if __name__ == "__main__":
    main()
