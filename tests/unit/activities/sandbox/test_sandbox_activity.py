"""A `sandbox_call` the worker refuses runs nothing and stores no folder: limits above the
worker's maxima, or a worker without bubblewrap (the answer says how to install it). The calls
that run are tested through real sandboxes in tests/activities/test_sandbox_attacks.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment
from turnkeeper.activities.sandbox.limits import SandboxLimits
from turnkeeper.activities.sandbox.sandbox_activity import SandboxActivities
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.contracts.sandbox import SandboxSpec
from turnkeeper.contracts.sandbox_io import SandboxCallInput

from turnkeeper.payloads.content_store import LocalFolderStore


@pytest.mark.parametrize(
    ("limits", "spec", "said"),
    [
        (SandboxLimits(max_timeout_s=5), SandboxSpec(timeout_s=10), "maximum of 5 s"),
        (SandboxLimits(), SandboxSpec(network=True), "gives its sandboxes no network"),
        (SandboxLimits(bwrap="/nowhere/bwrap"), SandboxSpec(), "apt-get install bubblewrap"),
    ],
)
async def test_a_refused_call_runs_nothing_and_keeps_the_folder(
    tmp_path: Path, limits: SandboxLimits, spec: SandboxSpec, said: str
) -> None:
    store = LocalFolderStore(tmp_path / "store")
    activities = SandboxActivities(limits, store, Workspace(tmp_path / "workspace"))
    call = SandboxCallInput(
        turn_id="turn-1",
        call_id="call-1",
        tool="run_python",
        input={"code": "open('x', 'w').write('x')"},
        spec=spec,
        state_ref="sha256:previous",
    )
    result = await ActivityEnvironment().run(activities.sandbox_call, call)
    assert result.is_error and said in result.content
    assert result.state is None  # the turn keeps the folder it had
    stored = [path for path in (tmp_path / "store").rglob("*") if path.is_file()]
    assert len(stored) == 1  # the tool_result block, and no archive
