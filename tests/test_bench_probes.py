"""The bench's probes, run small as tests. The memory probe reads our workflow's private parts
(the turn, its view, the stream's log): a refactor that moves them must move the probe too. The
history probe runs the bench's turn and its bare-Temporal floor, and keeps our history within
1.5 times the floor's. The house probe counts the modules one worker-tool call runs through. The
long-turn probe runs our side of `bench.long_history` (the peers need their own virtualenv)."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.converter import DataConverter

from bench import skills_prompt
from bench.floor_tree import floor_tree_worker
from bench.history import floor_history, turnkeeper_history
from bench.subagents import FLOOR_TREE, OURS_TREE, Shapes, TreeBenchProvider, run_shape
from bench.turnkeeper_side import bench_data_converter, turnkeeper_worker
from tests.unit.test_bench_house import printed_figures

ROOT = Path(__file__).resolve().parents[1]


def test_the_parked_memory_probe_measures_each_part_of_a_parked_turn(tmp_path: Path) -> None:
    out = tmp_path / "parked.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.parked_memory", "--n", "4", "--warm-up", "2", "--out", out],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    parts = json.loads(out.read_text())["parts_kib_per_turn"]
    assert parts["instances"] == 6
    assert parts["Turn.request"] > 0 and parts["TurnView and stream, the rest"] > 0


def _with_converter(client: Client, converter: DataConverter) -> Client:
    return Client(**{**client.config(), "data_converter": converter})


async def test_a_turn_writes_at_most_one_and_a_half_times_the_bare_floor(
    client: Client, tmp_path: Path
) -> None:
    k = 10
    floor = await floor_history(_with_converter(client, DataConverter.default), k)
    ours = await turnkeeper_history(
        _with_converter(client, bench_data_converter(tmp_path)), k, tmp_path
    )

    assert ours.total_bytes <= 1.5 * floor.total_bytes, (ours.as_dict(), floor.as_dict())
    # The 2 KiB tool results are in history once (in the report), as references otherwise.
    assert ours.tool_result_bytes < 300 * k


async def test_the_sub_agent_bench_plays_a_lead_and_its_floor(
    client: Client, tmp_path: Path
) -> None:
    ours = _with_converter(client, bench_data_converter(tmp_path))
    floor = _with_converter(client, DataConverter.default)
    ours_queue, floor_queue = f"bench-tree-{uuid.uuid4()}", f"bench-floor-tree-{uuid.uuid4()}"
    shapes = Shapes(floor, ours, floor_queue, ours_queue)
    async with (
        floor_tree_worker(floor, floor_queue),
        turnkeeper_worker(ours, ours_queue, tmp_path, provider=TreeBenchProvider()),
    ):
        # run_shape raises unless the lead's report lists both children, completed.
        lead = await run_shape(shapes, OURS_TREE, None, 2, 1, 0, 100)
        bare = await run_shape(shapes, FLOOR_TREE, None, 2, 1, 0, 100)

    for measured in (lead, bare):
        assert 0 < measured["parent_bytes"] < measured["tree_bytes"]


async def test_the_skills_prompt_probe_measures_a_real_first_request(
    client: Client, tmp_path: Path
) -> None:
    result = await skills_prompt.measure(client, 3, 400)

    none, listed, always = result["arms"].values()
    # The listed arm adds a line a skill and the two skill tools; the always arm every text.
    assert none["tools"] == 2 and listed["tools"] == always["tools"] == 4
    assert none["system_chars"] < listed["system_chars"] < always["system_chars"]
    assert always["system_chars"] - none["system_chars"] > 3 * 400
    assert listed["tokens"] == listed["chars"] // 4


def test_the_house_probe_counts_the_modules_of_one_worker_tool_call() -> None:
    table = printed_figures("tool-call")

    modules = int(table["modules per worker-tool call"])
    # The tool's activity and the turn's workflow are on the path, whatever their rooms.
    assert modules > 2
    assert "activities" in table["the same, by room"] and "workflows" in table["the same, by room"]


def test_the_long_turn_probe_keeps_every_tool_result_out_of_our_history(tmp_path: Path) -> None:
    out = tmp_path / "long.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.long_history", "--model-calls", "40", "--out", out],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (ours,) = json.loads(out.read_text())["sides"]
    assert ours["outcome"] == "completed" and ours["model_calls_completed"] == 40
    # 39 results of 8 KiB went to the store, none into an event, nor the report (over 256 KiB, it
    # is stored too): what the figure shows at 100 calls.
    assert ours["largest_event_bytes"] < 8 * 1024
    assert ours["history_bytes"] < 40 * 4 * 1024
    assert ours["store_bytes"] > 39 * 8 * 1024
