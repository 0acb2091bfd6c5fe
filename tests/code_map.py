"""The map from each module of the code to its tests, written into tests/README.md between two
marker lines: `python -m tests.code_map` rewrites it, `tests/unit/test_code_map.py` fails when it
is stale (a module added, moved or renamed without its row).

A module's tests are found two ways, neither a grep: its mirror in the fast tier
(`workflows/tools/calls.py` -> `tests/unit/workflows/test_tool_calls.py`) and every test file
that imports it (read from the file's syntax tree). Generated, the map stays right while modules
move; a module whose row says "none" has no test that names or imports it.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
README = TESTS / "README.md"
START = "<!-- code-map:start (python -m tests.code_map writes this part) -->"
END = "<!-- code-map:end -->"
# Cells list this many test files, then say how many more: a module every test imports
# (contracts.turn) would otherwise fill a screen.
SHOWN = 5


@dataclass(frozen=True)
class Module:
    name: str  # turnkeeper.workflows.tools.calls
    path: Path  # workflows/tools/calls.py, relative to the repository
    mirror: Path  # tests/unit/workflows/test_tool_calls.py, whether it exists or not


def _package_roots() -> dict[str, Path]:
    """`turnkeeper.contracts` -> contracts/, … as pyproject.toml's package-dir maps them."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {
        name: ROOT / folder
        for name, folder in pyproject["tool"]["setuptools"]["package-dir"].items()
    }


def modules() -> list[Module]:
    """Every module of the packages with code in it (empty `__init__.py` files left out)."""
    found: list[Module] = []
    for package, root in _package_roots().items():
        # turnkeeper/ holds the rooms (client/, console/, …): their tests sit at tests/unit/<room>/.
        mirror_root = TESTS / "unit" / ("" if package == "turnkeeper" else package.split(".")[-1])
        for path in sorted(root.rglob("*.py")):
            if ".venv" in path.parts or _only_a_docstring(path):
                continue
            relative = path.relative_to(root)
            if not all((root / part / "__init__.py").exists() for part in _folders(relative)):
                continue  # a script or data folder, not part of the package
            name = ".".join([package, *relative.with_suffix("").parts]).removesuffix(".__init__")
            stem = relative.parent.name if relative.name == "__init__.py" else relative.stem
            folder = relative.parent.parent if relative.name == "__init__.py" else relative.parent
            mirror = mirror_root / folder / f"test_{stem or package.split('.')[-1]}.py"
            found.append(Module(name, path.relative_to(ROOT), mirror.relative_to(ROOT)))
    return sorted(found, key=lambda module: module.path)


def _only_a_docstring(path: Path) -> bool:
    """An `__init__.py` that only says what its folder is: nothing in it to test."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return path.name == "__init__.py" and all(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body
    )


def _folders(relative: Path) -> Iterator[Path]:
    for depth in range(len(relative.parts) - 1):
        yield Path(*relative.parts[: depth + 1])


def every_test_file() -> list[Path]:
    return sorted(path.relative_to(ROOT) for path in TESTS.rglob("test_*.py"))


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The modules of ours a file imports: `import a.b`, `from a.b import c` (a.b, and a.b.c
    when c is itself a module), anywhere in the file."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    return imported & known


def importers_of(all_modules: list[Module]) -> dict[str, list[Path]]:
    """Each module's importers in the code: where to look next for a module tested only through
    another (`workflows/tools/calls.py` through the turn workflow's tests)."""
    known = {module.name for module in all_modules}
    found: dict[str, list[Path]] = {module.name: [] for module in all_modules}
    for module in all_modules:
        for name in sorted(imported_modules(module.path, known) - {module.name}):
            found[name].append(module.path)
    return found


def found_tests(all_modules: list[Module]) -> dict[str, list[Path]]:
    """Each module's test files: its mirror first, then every test file that imports it."""
    known = {module.name for module in all_modules}
    found: dict[str, list[Path]] = {module.name: [] for module in all_modules}
    for module in all_modules:
        if (ROOT / module.mirror).exists():
            found[module.name].append(module.mirror)
    for path in every_test_file():
        for name in sorted(imported_modules(path, known)):
            if path not in found[name]:
                found[name].append(path)
    return found


def _cell(paths: list[Path], under: str = "tests") -> str:
    if not paths:
        return "none"
    shown = [f"`{path.relative_to(under)}`" for path in paths[:SHOWN]]
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(shown) + more


def table() -> str:
    """The map as a Markdown table: module, fast-tier tests, tests of the slower tiers, and the
    modules that import it (whose tests reach it too)."""
    all_modules = modules()
    found = found_tests(all_modules)
    importers = importers_of(all_modules)
    lines = [
        "| module | fast tier (`tests/unit`) | slower tiers | imported by |",
        "|---|---|---|---|",
    ]
    for module in all_modules:
        unit = [path for path in found[module.name] if path.parts[1] == "unit"]
        slower = [path for path in found[module.name] if path.parts[1] != "unit"]
        used_by = _cell(importers[module.name], under=".")
        lines.append(f"| `{module.path}` | {_cell(unit)} | {_cell(slower)} | {used_by} |")
    untested = [module for module in all_modules if not found[module.name]]
    lines += ["", f"Modules no test file mirrors or imports ({len(untested)}):", ""]
    lines += [f"- `{module.path}`" for module in untested] or ["- none"]
    return "\n".join(lines)


def with_map(readme: str) -> str:
    """The README with the part between the markers written anew."""
    before, _, rest = readme.partition(START + "\n")
    _, _, after = rest.partition(END)
    return f"{before}{START}\n{table()}\n{END}{after}"


def main() -> int:
    text = README.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{README.relative_to(ROOT)} lacks the marker lines {START!r} and {END!r}")
        return 1
    README.write_text(with_map(text), encoding="utf-8")
    print(f"{README.relative_to(ROOT)}: the map of {len(modules())} modules written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
