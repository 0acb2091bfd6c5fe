"""Private keys written as `ssh-keygen` writes them, for the console's `--key FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
)


def write_key(path: Path, key: Any, passphrase: bytes | None = None) -> Path:
    """`key` as ssh-keygen writes it (OpenSSH format), optionally protected by `passphrase`."""
    protection = BestAvailableEncryption(passphrase) if passphrase else NoEncryption()
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, protection))
    return path
