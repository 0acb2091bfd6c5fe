"""What stays out of workflow history, and the data converter that keeps it out.

Bulk conversation content enters a turn's history once: in the final report. Its other trips
(a tool's output coming back, an assistant message with a long `tool_use` input, a conversation
re-sent inline after a store loss, the state a long turn carries into its next run) are payloads
of `ClaimChecked` types, and those go to the content store through the SDK's external storage
once they reach `CLAIM_CHECK_BYTES`; history keeps a reference of about 200 bytes.

What a person reads in the Web UI (the request, the report, signals, decisions, small tool
outputs) stays inline unless it reaches `LARGE_PAYLOAD_BYTES`, where any payload is stored so
that no turn trips Temporal's payload limits (a warning at 512 KiB, a failure at 2 MiB).

Every worker and every client of a turn must use `turn_data_converter` over the same store:
the SDK reads references back transparently, so workflow code, queries and reports see values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.common import RawValue
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, pydantic_data_converter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverter,
    DefaultPayloadConverter,
    ExternalStorage,
    JSONPlainPayloadConverter,
    PayloadConverter,
    StorageDriver,
    StorageDriverSelectContext,
)
from temporalio.exceptions import ApplicationError

from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.errors import ENCRYPTION_REQUIRED
from turnkeeper.contracts.plaintext import is_marked
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.encryption_codec import EncryptionCodec, MissingKeyHook
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_driver import ContentStoreDriver

CLAIM_CHECK_BYTES: Final = 1024
LARGE_PAYLOAD_BYTES: Final = 256 * 1024
_MARK: Final = "turnkeeper-claim-check"


# The SDK builds a payload converter for every workflow instance, and the pydantic one brings a
# cache of compiled validators of its own: each cached turn held its own copies. Our models are
# imported once for all instances (passed through the sandbox), so one cache serves them all;
# `functools.lru_cache` and pydantic's validators are safe to share between activation threads.
_SHARED_JSON_CONVERTER: Final = PydanticJSONPlainPayloadConverter()


class TurnPayloadConverter(CompositePayloadConverter):
    """The pydantic JSON converter, with one validator cache per process, marking
    `ClaimChecked` payloads of `CLAIM_CHECK_BYTES` or more so that the storage selector (which
    sees payloads, not values) can tell them apart."""

    def __init__(self) -> None:
        super().__init__(
            *(
                _SHARED_JSON_CONVERTER if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )

    def to_payloads(self, values: Sequence[Any]) -> list[Payload]:
        payloads = super().to_payloads(values)
        for value, payload in zip(values, payloads, strict=True):
            if isinstance(value, ClaimChecked) and payload.ByteSize() >= CLAIM_CHECK_BYTES:
                payload.metadata[_MARK] = b"1"
        return payloads

    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[Any]:
        # Temporal drops a workflow's type hints when its inputs do not match its parameters in
        # number (a turn's first run: one input, two parameters), so a request that arrived
        # unencrypted at a worker that requires encryption would reach it as bare JSON. Where no
        # type was asked for, a marked payload is handed over raw, mark included, for the
        # workflow to refuse (`workflows/inputs/plaintext.py`); typed receivers decode it as before.
        decode = super().from_payloads
        if type_hints is not None or not any(is_marked(p) for p in payloads):
            return decode(payloads, type_hints)
        return [RawValue(p) if is_marked(p) else decode([p])[0] for p in payloads]


class TurnFailureConverter(DefaultFailureConverter):
    """With keys: failure messages and stack traces are encrypted (Temporal's encoded
    attributes), except an `EncryptionRequired` refusal's. Its sender lacks the keys, and the
    message, which names no content, is what tells it how to send encrypted."""

    def __init__(self) -> None:
        super().__init__(encode_common_attributes=True)
        self._readable = DefaultFailureConverter()

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        if isinstance(exception, ApplicationError) and exception.type == ENCRYPTION_REQUIRED:
            self._readable.to_failure(exception, payload_converter, failure)
            failure.stack_trace = ""  # where in our code it was refused is nobody's business
            return
        super().to_failure(exception, payload_converter, failure)


def external_storage(driver: StorageDriver) -> ExternalStorage:
    def select(context: StorageDriverSelectContext, payload: Payload) -> StorageDriver | None:
        if _MARK in payload.metadata or payload.ByteSize() >= LARGE_PAYLOAD_BYTES:
            return driver
        return None

    return ExternalStorage(
        drivers=[driver], driver_selector=select, payload_size_threshold=CLAIM_CHECK_BYTES
    )


def turn_data_converter(
    store: ContentStore,
    keyring: Keyring | None = None,
    *,
    on_missing_key: MissingKeyHook | None = None,
    require_encryption: bool = False,
) -> DataConverter:
    """The converter of every client and worker of a turn.

    Args:
        store: The content store, encrypting when `keyring` has keys (`stores.open_store`).
        keyring: The deployment's encryption keys; None or empty: payloads stay plaintext.
        on_missing_key: See `EncryptionCodec`.
        require_encryption: A worker's converter that marks what arrives unencrypted, for its
            workflows to refuse (see `EncryptionCodec`).
    """
    keyring = keyring or Keyring()
    return dataclasses.replace(
        pydantic_data_converter,
        payload_converter_class=TurnPayloadConverter,
        payload_codec=EncryptionCodec(
            keyring, on_missing_key, require_encryption=require_encryption
        ),
        # Failure messages can quote a tool's error text: with keys, they are encrypted too.
        failure_converter_class=(
            TurnFailureConverter if keyring.enabled else DefaultFailureConverter
        ),
        external_storage=external_storage(ContentStoreDriver(store)),
    )
