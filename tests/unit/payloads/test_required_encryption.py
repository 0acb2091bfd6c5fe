"""The parts of `TURNKEEPER_REQUIRE_ENCRYPTION` on their own: the codec's mark on what arrives
unencrypted, the converter that hands a marked payload over raw, the one failure message left
readable, and the variable (a worker that refuses to start without keys:
tests/test_required_encryption_worker.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.errors import ENCRYPTION_REQUIRED
from turnkeeper.contracts.plaintext import PLAINTEXT_MARK, is_marked

from turnkeeper.client.settings_error import SettingsError
from turnkeeper.payloads.content_store import LocalFolderStore
from turnkeeper.payloads.encryption_codec import ENCODING, EncryptionCodec
from turnkeeper.payloads.keyring import Keyring, new_key_entry
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.worker.settings import Settings

REPO = Path(__file__).resolve().parents[3]
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
