"""Where a worker's CPU goes, from a py-spy profile in raw (collapsed-stack) format.

    py-spy record --gil --format raw --rate 200 -o ours.txt -- \\
        python -m bench.run --sections concurrency-large --large-sides turnkeeper --large-n 200
    python -m bench.profile_summary ours.txt [floor.txt]

Record with `--gil` so that only the thread holding the GIL is sampled (Python CPU). Each
sample is put in the first category whose marker is on its stack (most specific first), so the
shares add up to 100 % of the samples that were not idle waits. With two files the second
column is the other profile, and the last column is the difference in samples: read it as "what
one side spends that the other does not", when both ran the same number of turns.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

# (category, markers): a sample belongs to the first category one of whose markers (a substring
# of a frame "function (file:line)") is on its stack.
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("activity: tool JSON schema rebuilt per call", ("WorkerTool.definition",)),
    ("activity: content store (files, sha256)", ("LocalFolderStore.", "content_ref")),
    ("activity: conversation store (load/append)", ("ConversationStore.",)),
    ("activity: tracing/metrics", ("model_call_span", "tool_span", "metrics.py")),
    ("activity: structlog", ("structlog",)),
    ("activity: model_call other", ("ModelCallActivities.model_call",)),
    ("activity: tool_call other", ("ToolActivities.tool_call",)),
    ("activity: bench fakes", ("BenchProvider.", "floor_model", "floor_tool")),
    ("activity: SDK (decode input, encode result, heartbeat)", ("_ActivityWorker.",)),
    ("workflow: sandbox re-import per run", ("_create_workflow_instance",)),
    (
        "workflow: sandbox entry per payload (serialization context)",
        ("get_serialization_context", "get_external_store_context"),
    ),
    ("workflow: stream events (publish)", ("WorkflowTopicHandle.publish", "_publish_to_topic")),
    ("workflow: search attributes / details", ("TurnView.publish", "details_markdown")),
    ("workflow: pydantic in workflow code", ("pydantic", "_model_construction")),
    ("workflow: our code (activation)", ("InSandbox.activate", "_WorkflowInstanceImpl.activate")),
    (
        "workflow: payload visitor / codec",
        ("PayloadVisitor", "_Visitor.visit", "encode_completion"),
    ),
    ("workflow: SDK other", ("_WorkflowWorker.",)),
    ("client: start, result", ("Client.", "WorkflowHandle.", "_ClientImpl", "start_workflow")),
    ("bench harness", ("bench/sections.py", "bench/sides.py")),
    ("event loop and threads (other)", ("base_events.py", "threading.py", "thread.py")),
]


def categorize(path: Path) -> tuple[Counter[str], int]:
    counts: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        total += samples
        counts[_category(stack)] += samples
    return counts, total


# py-spy samples threads blocked in Python-level waits too: an idle thread-pool worker (waiting
# for work in `_worker`) or the event loop in `select`. They are not CPU; counted apart.
IDLE = "idle waits (thread pool, selector): not CPU"
_IDLE_LEAVES = ("_worker (", "EpollSelector.select (", "select (selectors.py")


def _category(stack: str) -> str:
    leaf = stack.rsplit(";", 1)[-1]
    if leaf.startswith(_IDLE_LEAVES):
        return IDLE
    for name, markers in CATEGORIES:
        if any(marker in stack for marker in markers):
            return name
    return "other"


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    profiles = [categorize(Path(arg)) for arg in argv[:2]]
    names = [name for name, _ in CATEGORIES] + ["other", IDLE]
    header = "| category | " + " | ".join(Path(a).name for a in argv[:2])
    header += " | difference (samples) |" if len(profiles) == 2 else " |"
    print(header)
    print("|---|" + "---:|" * (len(profiles) + (1 if len(profiles) == 2 else 0)))
    for name in names:
        cells = [
            f"{c[name]}" if name == IDLE else f"{c[name]} ({c[name] / (t - c[IDLE]):.1%})"
            for c, t in profiles
        ]
        if len(profiles) == 2:
            cells.append(str(profiles[0][0][name] - profiles[1][0][name]))
        print(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"{t} ({t - c[IDLE]} not idle)" for c, t in profiles]
    if len(profiles) == 2:
        busy = [t - c[IDLE] for c, t in profiles]
        totals.append(f"{profiles[0][1] - profiles[1][1]} ({busy[0] - busy[1]} not idle)")
    print("| **all samples** | " + " | ".join(totals) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
