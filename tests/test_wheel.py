"""The built wheel, installed next to an application that has its own `workflows` and
`activities` packages and `worker.py` (as most Temporal applications do): both import, each from
its own place, and the wheel puts nothing into site-packages but `turnkeeper`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What a build needs, as the Dockerfile copies it.
SOURCES = ("pyproject.toml", "README.md", "contracts", "workflows", "activities", "turnkeeper")


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(dist),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = dist.glob("turnkeeper-*.whl")
    return wheel


def application(root: Path) -> Path:
    """A Temporal application of someone else's, with the names we used to take."""
    for package in ("workflows", "activities"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(f"OWNER = 'the application: {package}'\n")
    (root / "worker.py").write_text("OWNER = 'the application: worker'\n")
    return root


def test_the_wheel_installs_beside_an_application_of_the_same_shape(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    top_level = {Path(name).parts[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {p for p in top_level if not p.endswith(".dist-info")} == {"turnkeeper"}

    # A fresh environment with only the wheel installed; its dependencies are read from this
    # environment's site-packages, added as a plain path so that the editable install of the
    # checkout (a .pth hook there) is not.
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next(env.glob("lib/python*/site-packages"))
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
         str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    app = application(tmp_path / "app")
    script = textwrap.dedent(
        """
        import activities, worker, workflows
        import turnkeeper
        from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow
        from turnkeeper.worker.wiring import build_activities
        from turnkeeper.contracts.pricing import PRICING_FILE
        assert workflows.OWNER.endswith("workflows") and activities.OWNER.endswith("activities")
        assert worker.OWNER.endswith("worker")
        assert "site-packages" in turnkeeper.workflows.__file__, turnkeeper.workflows.__file__
        assert PRICING_FILE.is_file()
        print(sorted(name for name in turnkeeper.__all__ if getattr(turnkeeper, name) is None))
        """
    )
    done = subprocess.run(
        [str(env / "bin" / "python"), "-c", script],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
