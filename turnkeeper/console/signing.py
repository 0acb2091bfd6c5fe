"""Signing decisions at the console: `turnkeeper approve|reject … --key FILE`.

Reads the approver's OpenSSH Ed25519 private key (asking for its passphrase when it has one) and
has each decision signed for the one turn and call it is sent to, valid for a short while. What
is signed is defined in `contracts/decision_signing.py`, and signed by the client
(`turnkeeper.client.signatures`); this module only reads the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final

import typer
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import SSHPrivateKeyTypes, load_ssh_private_key

from turnkeeper.console.terminal import CommandError

PASSPHRASE_ENV: Final = "TURNKEEPER_KEY_PASSPHRASE"
DEFAULT_EXPIRES_IN: Final = "10m"
# Exit code of a command line that cannot work (see cli.py).
_INVALID: Final = 2
_DURATION = re.compile(r"^\s*(\d+)\s*([smh]?)\s*$")
_UNIT_SECONDS: Final = {"": 1, "s": 1, "m": 60, "h": 3600}

Passphrase = Callable[[Path], str]


@dataclass(frozen=True)
class Signer:
    """An approver's key, and how long the decisions it signs stay valid (`TurnHandle` and
    `turnkeeper.client.signatures` do the signing)."""

    key: Ed25519PrivateKey
    expires_in: timedelta


def signer_for(
    key_file: Path | None,
    approver: str | None,
    expires_in: str,
    passphrase: Passphrase | None = None,
) -> Signer | None:
    """The signer that `--key`, `--approver` and `--expires-in` ask for; None without `--key`.

    Raises:
        CommandError: No approver name, a bad duration, or a key that cannot be used; one line
            that says what to do.
    """
    if key_file is None:
        return None
    if not approver:
        raise CommandError(
            "--key needs --approver: the name your public key has in the agent's approvers",
            _INVALID,
        )
    lifetime = parse_expires_in(expires_in)
    return Signer(load_signing_key(key_file, passphrase or ask_passphrase), lifetime)


def parse_expires_in(text: str) -> timedelta:
    """`90`, `90s`, `15m` or `2h` as a duration.

    Raises:
        CommandError: Anything else, or zero.
    """
    match = _DURATION.match(text)
    if match is None or int(match.group(1)) == 0:
        raise CommandError(
            f"--expires-in: {text!r} is not a duration; give seconds (600) or 90s, 15m, 2h",
            _INVALID,
        )
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def load_signing_key(path: Path, passphrase: Passphrase) -> Ed25519PrivateKey:
    """The Ed25519 private key in the OpenSSH file `path`.

    Raises:
        CommandError: The file cannot be read, is not an OpenSSH private key, is not Ed25519,
            or the passphrase is wrong.
    """
    path = path.expanduser()
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CommandError(f"cannot read the key {path}: {err.strerror}", _INVALID) from None
    try:
        key = load_ssh_private_key(data, password=None)
    except TypeError:  # protected by a passphrase
        key = _decrypted(path, data, passphrase(path))
    except ValueError as err:
        raise CommandError(
            f"{path} is not an OpenSSH private key ({err}); give the file that ssh-keygen -t "
            "ed25519 wrote, e.g. ~/.ssh/id_ed25519",
            _INVALID,
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CommandError(
            f"{path} is not an Ed25519 key ({type(key).__name__}); decisions are signed with "
            "Ed25519 keys (ssh-keygen -t ed25519)",
            _INVALID,
        )
    return key


def ask_passphrase(path: Path) -> str:
    """The passphrase of `path`: from TURNKEEPER_KEY_PASSPHRASE, else asked without echo (or
    read from standard input when it is not a terminal).

    Raises:
        CommandError: None was given (end of input, Ctrl-C).
    """
    given = os.environ.get(PASSPHRASE_ENV)
    if given is not None:
        return given
    try:
        # On stderr, so that `--print` leaves nothing but the payload on stdout.
        return str(typer.prompt(f"Passphrase for {path}", hide_input=True, err=True))
    except typer.Abort:
        raise CommandError(
            f"{path} is protected by a passphrase and none was given; set {PASSPHRASE_ENV}",
            _INVALID,
        ) from None


def _decrypted(path: Path, data: bytes, passphrase: str) -> SSHPrivateKeyTypes:
    try:
        return load_ssh_private_key(data, password=passphrase.encode("utf-8"))
    except ValueError:
        raise CommandError(
            f"cannot read the key {path}: wrong passphrase, or a damaged file", _INVALID
        ) from None
    except UnsupportedAlgorithm as err:  # no bcrypt, which protected keys need
        raise CommandError(f"cannot read the key {path}: {err}", _INVALID) from None
