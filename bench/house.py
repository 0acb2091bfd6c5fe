"""`python -m bench.house [--json] [--figures NAMES]`: how much of the code a maintainer meets,
in five figures (`--figures` picks some of `tool-call,loop,arrows,duplicates,turn`), for the
checkout it runs in, whichever checkout the interpreter's editable install points at. Modules
and classes are found by a search, never by their path, so that the figures measure the same
thing while modules move between the rooms of `workflows/`.

- **modules per worker-tool call** (`tool-call`, `bench/house_call.py`): measured while a turn
  runs. A test-kit turn (`TurnTestEnvironment` on a dev server of its own) whose scripted model
  first asks for one worker tool, then answers. A profiler on every thread (`sys.setprofile`,
  `threading.setprofile`) records the module (`__name__` of the frame's globals) of every Python
  function called from the moment the model produces the response naming the call to the moment
  the next model call receives the tool's result: the model-call activity's result on its way
  to the workflow, the workflow recording it and scheduling the tool, the tool's activity, the
  workflow recording the result and scheduling the next model call, and the payload converter
  and codec between them. Counted are the distinct `turnkeeper.*` modules, less the code that
  runs inside the model-call activity (both ends of the window lie in it: that is the model
  call, not the tool call) and less the test kit (`turnkeeper.testing`, the stand-in model).
  Also by room. The worker runs with `TEMPORAL_DEBUG`, so that the profiler's slowness cannot
  trip the deadlock detector.
- **files to understand the loop** (`loop`), two ways, each as files and their lines (every
  line, blank and docstring included), from the module that defines `AgentTurnWorkflow`:
  *the loop names*: that module and the modules of `turnkeeper.workflows` it imports directly
  (through a package that re-exports: the package's `__init__` and the modules of the package
  it imports); *the loop reaches*: that module and every module it reaches through imports,
  direct or not, in `turnkeeper.workflows` or `turnkeeper.contracts`, less the workflows'
  `observation` package (it watches the loop; it is not the loop).
- **import arrows in workflows/** (`arrows`): distinct (importer, imported) pairs of modules
  both in `turnkeeper.workflows`, `__init__` modules included; and the same with each
  sub-package of it counted as one module (arrows between its rooms and top-level modules).
- **duplicate pairs per 1,000 lines** (`duplicates`): the pair count of the `duplicates`
  command over the whole checkout (no `--change`), over the lines of the checkout's Python files
  (those git tracks and the untracked ones it does not ignore, which is what `duplicates` reads)
  divided by 1,000. `n/a` where the command is not on PATH.
- **`Turn`** (`turn`): the class named `Turn` in `turnkeeper.workflows`: its fields with those
  it inherits (pydantic's `model_fields`), and the methods (`def`s, properties included) and
  lines (decorators to the last line) of its class and of each base class of the project's;
  also the lines of the whole module that defines it, and its parts (fields whose type is
  another model of `turnkeeper.workflows`).

Imports are grimp's, `TYPE_CHECKING` ones included (`bench/house_graph.py` says how it reads a
checkout whose folders are not its packages' names).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable
from typing import Any

from bench.house_call import tool_call_modules
from bench.house_graph import (
    ROOT,
    TURN_CLASS,
    checkout_importable,
    defining_module,
    import_graph,
    loop_named,
    loop_reached,
    turn_shape,
    workflow_arrows,
)

FIGURES = ("tool-call", "loop", "arrows", "duplicates", "turn")
DUPLICATES_SECONDS = 300  # the whole tree reads in seconds; the margin is for a loaded machine


def measure(figures: Iterable[str]) -> dict[str, Any]:
    """Every figure asked for, as a JSON-ready dict."""
    wanted = set(figures)
    result: dict[str, Any] = {"commit": _commit()}
    # Before anything imports turnkeeper: see `import_graph`.
    graph = import_graph() if wanted & {"loop", "arrows", "turn"} else None
    if graph is not None and "loop" in wanted:
        for key, files in (
            ("loop_named", loop_named(graph)),
            ("loop_reached", loop_reached(graph)),
        ):
            result[key] = {"files": len(files), "lines": sum(files.values()), "modules": files}
    if graph is not None and "arrows" in wanted:
        between_modules, folded = workflow_arrows(graph)
        result["workflow_arrows"] = {"modules": between_modules, "packages_folded": folded}
    if "duplicates" in wanted:
        result["duplicates"] = duplicates_figure()
    with checkout_importable():
        if graph is not None and "turn" in wanted:
            result["turn"] = turn_shape(defining_module(graph, TURN_CLASS)).__dict__
        if "tool-call" in wanted:
            names = asyncio.run(tool_call_modules())
            rooms = Counter(".".join(name.split(".")[:2]) for name in names)
            result["tool_call"] = {"modules": len(names), "by_room": dict(rooms), "names": names}
    return result


def duplicates_figure() -> dict[str, Any]:
    """The pairs, the Python lines and the pairs per 1,000 lines (None without the command)."""
    pairs, lines = duplicate_pairs(), python_lines()
    per_1000 = None if pairs is None else round(pairs / (lines / 1000), 3)
    return {"pairs": pairs, "python_lines": lines, "per_1000_lines": per_1000}


def duplicate_pairs() -> int | None:
    """The pairs `duplicates` lists over the whole checkout; None when it is not installed."""
    command = shutil.which("duplicates")
    if command is None:
        return None
    done = subprocess.run(
        [command, "--repo", str(ROOT), "--most", "1", "--seconds", str(DUPLICATES_SECONDS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=DUPLICATES_SECONDS + 60,
    )
    if "incomplete:" in done.stdout:
        raise RuntimeError(f"duplicates did not read the whole tree: {done.stdout}")
    first = done.stdout.splitlines()[0]
    if first.startswith("no duplicates"):
        return 0
    counted = re.match(r"(\d+) pairs? of places", first)
    if counted is None:
        raise RuntimeError(f"cannot read the pair count from duplicates: {first!r}")
    return int(counted.group(1))


def python_lines() -> int:
    """Lines of the Python files `duplicates` reads: tracked, or untracked and not ignored."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = {ROOT / name for name in listed.split("\0") if name.endswith(".py")}
    return sum(
        len(path.read_text(encoding="utf-8").splitlines()) for path in paths if path.is_file()
    )


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def rows(result: dict[str, Any]) -> list[tuple[str, object]]:
    """(figure, value) for each figure in `result`, in the order the module's docstring has."""
    found: list[tuple[str, object]] = []
    if "tool_call" in result:
        call = result["tool_call"]
        rooms = ", ".join(
            f"{room.split('.')[-1]} {n}" for room, n in sorted(call["by_room"].items())
        )
        found += [("modules per worker-tool call", call["modules"]), ("the same, by room", rooms)]
    for key, label in (("loop_named", "the loop names"), ("loop_reached", "the loop reaches")):
        if key in result:
            found.append((f"files {label}", result[key]["files"]))
            found.append((f"lines of the files {label}", result[key]["lines"]))
    if "workflow_arrows" in result:
        arrows = result["workflow_arrows"]
        found.append(("import arrows in workflows/, between modules", arrows["modules"]))
        found.append(("the same, a sub-package as one", arrows["packages_folded"]))
    if "duplicates" in result:
        dup = result["duplicates"]
        missing = "n/a (no `duplicates` command)"
        per_1000 = missing if dup["pairs"] is None else dup["per_1000_lines"]
        found.append(("duplicate pairs per 1,000 lines", per_1000))
        found.append(("duplicate pairs", missing if dup["pairs"] is None else dup["pairs"]))
        found.append(("Python lines", dup["python_lines"]))
    if "turn" in result:
        turn = result["turn"]
        found += [(f"`Turn` {key}", turn[key]) for key in ("fields", "methods", "lines")]
        found.append(("lines of the module of `Turn`", turn["module_lines"]))
        found.append(("`Turn` parts", len(turn["parts"])))
    return found


def table(result: dict[str, Any]) -> str:
    """The figures as a markdown table."""
    lines = [f"checkout {result['commit']}", "", "| figure | value |", "|---|---:|"]
    lines += [f"| {label} | {value} |" for label, value in rows(result)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--figures",
        default=",".join(FIGURES),
        help=f"comma-separated, of {', '.join(FIGURES)} (default: all)",
    )
    args = parser.parse_args()
    figures = [name.strip() for name in args.figures.split(",") if name.strip()]
    unknown = set(figures) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figures: {', '.join(sorted(unknown))}")
    result = measure(figures)
    print(json.dumps(result, indent=2) if args.json else table(result))


if __name__ == "__main__":
    main()
