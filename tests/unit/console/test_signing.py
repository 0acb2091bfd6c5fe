"""`turnkeeper approve|reject … --key FILE`: one clear line and exit 2 (never a traceback) for
every key or flag that cannot work, refused before the command dials Temporal. (Signed decisions
sent to real turns: tests/cli/test_signed_decisions.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    invoke,
    restore_logging,
)
from tests.support.signing_keys import write_key


def ecdsa_key() -> Any:
    return generate_private_key(SECP256R1())


@pytest.mark.parametrize(
    ("setup", "flags", "needle"),
    [
        ("ed25519", ["--approver", "alice", "--expires-in", "soon"], "--expires-in: 'soon'"),
        ("ed25519", ["--approver", "alice", "--expires-in", "0"], "is not a duration"),
        ("ed25519", [], "--key needs --approver"),
        ("missing", ["--approver", "alice"], "cannot read the key"),
        ("garbage", ["--approver", "alice"], "is not an OpenSSH private key"),
        ("ecdsa", ["--approver", "alice"], "is not an Ed25519 key"),
    ],
)
async def test_a_key_or_flag_that_cannot_work_is_one_line_and_exit_2(
    tmp_path: Path, setup: str, flags: list[str], needle: str
) -> None:
    key_file = tmp_path / "key"
    if setup == "ed25519":
        write_key(key_file, Ed25519PrivateKey.generate())
    elif setup == "garbage":
        key_file.write_text("-----BEGIN NONSENSE-----\n")
    elif setup == "ecdsa":
        write_key(key_file, ecdsa_key())

    result = await invoke("approve", "turn-x", "toolu_1", "--key", str(key_file), *flags, "--print")

    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    assert result.stdout == "" and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) <= 2  # one line, wrapped at most once
