"""The parts of `TURNKEEPER_REQUIRE_ENCRYPTION` on their own: the codec's mark on what arrives
unencrypted, the converter that hands a marked payload over raw, the one failure message left
readable, the variable, and a worker that refuses to start without keys."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.errors import ENCRYPTION_REQUIRED
from turnkeeper.contracts.plaintext import PLAINTEXT_MARK, is_marked

from turnkeeper.payloads.content_store import LocalFolderStore
from turnkeeper.payloads.encryption_codec import ENCODING, EncryptionCodec
from turnkeeper.payloads.keyring import Keyring, new_key_entry
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.worker.env_numbers import SettingsError
from turnkeeper.worker.settings import Settings

REPO = Path(__file__).resolve().parents[2]
KEYS = new_key_entry("k1")


def json_payload(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=f'{{"input": "{text}"}}'.encode())


async def test_a_requiring_codec_marks_only_what_arrived_unencrypted() -> None:
    requiring = EncryptionCodec(Keyring.parse(KEYS), require_encryption=True)
    plain = json_payload("hello")
    [encrypted] = await requiring.encode([plain])
    [from_outside, ours] = await requiring.decode([plain, encrypted])
    assert is_marked(from_outside)
    assert (from_outside.data, from_outside.metadata["encoding"]) == (plain.data, b"json/plain")
    assert not is_marked(plain)  # a marked copy: what the caller holds is left alone
    assert ours == plain

    accepting = EncryptionCodec(Keyring.parse(KEYS))
    assert await accepting.decode([plain]) == [plain]


async def test_a_marked_payload_leaves_encrypted_and_unmarked() -> None:
    codec = EncryptionCodec(Keyring.parse(KEYS), require_encryption=True)
    [marked] = await codec.decode([json_payload("carried on")])
    [sealed] = await codec.encode([marked])
    assert sealed.metadata["encoding"] == ENCODING and PLAINTEXT_MARK not in sealed.metadata
    assert await codec.decode([sealed]) == [json_payload("carried on")]


def test_a_marked_payload_decodes_raw_only_where_no_type_was_asked_for(tmp_path: Path) -> None:
    converter = turn_data_converter(
        LocalFolderStore(tmp_path), Keyring.parse(KEYS)
    ).payload_converter
    marked = json_payload("marked")
    marked.metadata[PLAINTEXT_MARK] = b"1"
    plain = json_payload("plain")

    first, second = converter.from_payloads([marked, plain])
    assert isinstance(first, RawValue) and first.payload == marked
    assert second == {"input": "plain"}
    assert converter.from_payloads([marked], [dict]) == [{"input": "marked"}]
    assert converter.from_payloads([plain]) == [{"input": "plain"}]


def failure_of(error: Exception, keys: str) -> Failure:
    # Converting a failure touches no store.
    converter = turn_data_converter(LocalFolderStore(REPO / "unused"), Keyring.parse(keys))
    failure = Failure()
    converter.failure_converter.to_failure(error, converter.payload_converter, failure)
    return failure


def test_only_the_refusal_of_unencrypted_input_keeps_a_readable_message() -> None:
    refusal = ApplicationError("send it encrypted", type=ENCRYPTION_REQUIRED, non_retryable=True)
    other = ApplicationError("a tool said something private", type="ToolArgumentsInvalid")
    readable = failure_of(refusal, KEYS)
    assert readable.message == "send it encrypted" and not readable.stack_trace
    assert readable.application_failure_info.type == ENCRYPTION_REQUIRED
    assert failure_of(other, KEYS).message == "Encoded failure"
    assert failure_of(other, "").message == "a tool said something private"


@pytest.mark.parametrize(
    ("value", "required"),
    [("1", True), ("true", True), ("YES", True), ("0", False), ("", False), ("no", False)],
)
def test_the_variable_is_a_plain_yes_or_no(value: str, required: bool) -> None:
    env = {"TURNKEEPER_REQUIRE_ENCRYPTION": value}
    assert Settings.from_env(env).require_encryption is required


def test_a_typo_in_the_variable_is_refused_not_read_as_no() -> None:
    with pytest.raises(SettingsError, match="TURNKEEPER_REQUIRE_ENCRYPTION must be 1 or 0"):
        Settings.from_env({"TURNKEEPER_REQUIRE_ENCRYPTION": "ture"})


def run_worker(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "worker.py"],
        cwd=REPO,
        # Nothing listens there: a worker that got as far as connecting would say so instead.
        env={
            "PATH": "/usr/bin:/bin",
            "TEMPORAL_ADDRESS": "127.0.0.1:1",
            "TURNKEEPER_DATA_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_worker_that_requires_encryption_without_keys_refuses_to_start(
    tmp_path: Path,
) -> None:
    done = run_worker(tmp_path, TURNKEEPER_REQUIRE_ENCRYPTION="1")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("TURNKEEPER_REQUIRE_ENCRYPTION is set but TURNKEEPER_ENCRYPTION_KEYS")
    assert "turnkeeper keys new" in last


def test_a_worker_with_a_misspelt_requirement_refuses_to_start(tmp_path: Path) -> None:
    env: dict[str, Any] = {"TURNKEEPER_ENCRYPTION_KEYS": KEYS}
    done = run_worker(tmp_path, TURNKEEPER_REQUIRE_ENCRYPTION="ture", **env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("TURNKEEPER_REQUIRE_ENCRYPTION must be")
