"""The package lines of turnkeeper as import-linter sees them: `python -m
tests.support.package_lines` prints who imports whom between the layers;
tests/test_package_lines.py runs the contracts of pyproject.toml's `[tool.importlinter]`.

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

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "turnkeeper"
# The rooms of the package, lowest first; every module belongs to the one that prefixes it.
ROOMS = (
    "turnkeeper.contracts",
    "turnkeeper.payloads",
    "turnkeeper.ground",
    "turnkeeper.workflows",
    "turnkeeper.activities",
    "turnkeeper.devtools",
    "turnkeeper.client",
    "turnkeeper.worker",
    "turnkeeper.http",
    "turnkeeper.console",
    "turnkeeper.testing",
)
ROOT_MODULE = "turnkeeper (its lazy exports)"
SCRIPT = "worker.py"


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


# How low each room sits: a module may import lower rooms; two rooms of one rank (workflows and
# activities, payloads and the ground, the console and the test kit) not each other.
# pyproject.toml's layers contract says the same, with the one crossing it names.
RANK = {
    **{room: rank for rank, room in enumerate(ROOMS)},
    "turnkeeper.activities": ROOMS.index("turnkeeper.workflows"),
    "turnkeeper.ground": ROOMS.index("turnkeeper.payloads"),
    "turnkeeper.testing": ROOMS.index("turnkeeper.console"),
    ROOT_MODULE: len(ROOMS),
    SCRIPT: len(ROOMS) + 1,
}


def layer_edges(layout: Path) -> tuple[dict[str, set[str]], list[str]]:
    """importer room -> imported rooms over the package copied into `layout`, and each
    module-level import that crosses a line (a room importing its sibling or one above it)."""
    import grimp

    sys.path.insert(0, str(layout))
    try:
        graph = grimp.build_graph(PACKAGE, cache_dir=None)
    finally:
        sys.path.remove(str(layout))

    def layer(module: str) -> str:
        for room in ROOMS:
            if module == room or module.startswith(room + "."):
                return room
        return ROOT_MODULE

    edges: dict[str, set[str]] = defaultdict(set)
    crossings: list[str] = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            low, high = layer(module), layer(imported)
            if low == high:
                continue
            edges[low].add(high)
            if RANK[low] <= RANK[high]:
                crossings.append(f"{module} -> {imported}")
    edges[SCRIPT] = {layer(name) for name in _script_imports(ROOT / SCRIPT)}
    return edges, crossings


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
