"""`turnkeeper run --attach`, `turnkeeper transcript` and `turnkeeper attachment get`, in-process
against a real turn: the file reaches the model, the transcript names it with its type, size and
digest, and `attachment get` writes back the same bytes; a digest the turn does not hold is
refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import TurnRunner, new_key
from tests.fakes import fake_anthropic as fake
from tests.fakes.attachment_checks import attachment_bytes
from tests.support.attachment_files import png_of
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
)


async def test_run_attach_then_transcript_and_attachment_get(
    turns: TurnRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The console's client and the worker share the worker's store, as one host's do.
    monkeypatch.setenv("TURNKEEPER_STORE_DIR", str(turns.settings.store_dir))
    chart = tmp_path / "chart.png"
    chart.write_bytes(png_of(300 * 1024))
    key = new_key()
    turns.fake.script(key, [fake.text("Sales rise in March.")])
    workflow_id = f"turn-attach-{key}"
    connection = [*address_of(turns.client), "--task-queue", turns.task_queue]

    ran = await invoke(
        "run", "What does the chart show?", "--attach", str(chart), "--id", workflow_id,
        "--system", f"[script:{key}]", "--model", "anthropic:claude-sonnet-4-6", *connection,
    )  # fmt: skip
    shown = await invoke("transcript", workflow_id, *address_of(turns.client))
    [digest] = re.findall(r"sha256:[A-Za-z0-9_-]{43}", shown.output)
    got = tmp_path / "got.png"
    fetched = await invoke(
        "attachment", "get", workflow_id, digest, "--out", str(got), *address_of(turns.client)
    )
    unknown = await invoke(
        "attachment", "get", workflow_id, "sha256:" + "A" * 43, *address_of(turns.client)
    )

    assert ran.exit_code == 0, ran.output
    assert "Sales rise in March." in ran.output
    [sent] = turns.fake.requests_for(key)
    assert attachment_bytes(sent.body) == [chart.read_bytes()]
    assert "chart.png · image/png · 300.0 KiB · sha256:" in shown.output
    assert fetched.exit_code == 0, fetched.output
    assert got.read_bytes() == chart.read_bytes()
    assert unknown.exit_code == 1 and "has no attachment" in unknown.output
