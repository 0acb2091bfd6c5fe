"""Payloads that reached a worker unencrypted when it requires encryption.

A worker started with `TURNKEEPER_REQUIRE_ENCRYPTION=1` (and keys) marks every payload its codec
decodes that was not encrypted: `PLAINTEXT_MARK` joins the payload's metadata, its data and
encoding stay as they were. Workflow code refuses what carries the mark
(`workflows/inputs/plaintext.py`). The mark carries the decision into the workflow, which reads no
environment; the worker's own payloads (activity results, continue-as-new, child inputs) are
encrypted, so they never carry it.
"""

from __future__ import annotations

from typing import Final

from temporalio.api.common.v1 import Payload

REQUIRE_ENCRYPTION_ENV: Final = "TURNKEEPER_REQUIRE_ENCRYPTION"
PLAINTEXT_MARK: Final = "turnkeeper-plaintext"


def is_marked(payload: Payload) -> bool:
    return PLAINTEXT_MARK in payload.metadata


def marked(payload: Payload) -> Payload:
    """A copy of `payload` that carries the mark."""
    copy = Payload()
    copy.CopyFrom(payload)
    copy.metadata[PLAINTEXT_MARK] = b"1"
    return copy


def unmarked(payload: Payload) -> Payload:
    """`payload` without the mark (a copy when it had one): the payload as its sender wrote it."""
    if not is_marked(payload):
        return payload
    copy = Payload()
    copy.CopyFrom(payload)
    del copy.metadata[PLAINTEXT_MARK]
    return copy


def refusal(what: str) -> str:
    """Why `what` (e.g. "the turn request") was refused, and how to send it encrypted.

    The sender lacks the keys, so this is the one failure message left readable to it
    (`payload_storage.TurnFailureConverter`); it names no content.
    """
    return (
        f"{what} reached the worker unencrypted, and this worker requires encryption "
        f"({REQUIRE_ENCRYPTION_ENV}): send it encrypted, either with the temporal CLI through "
        "the codec server (`turnkeeper codec-server`, then --codec-endpoint "
        'http://127.0.0.1:8081 on the command, and --codec-auth "Bearer <token>" when the '
        "codec server has TURNKEEPER_CODEC_TOKEN), or from a client that has "
        "TURNKEEPER_ENCRYPTION_KEYS (the turnkeeper command, turnkeeper.connect())"
    )
