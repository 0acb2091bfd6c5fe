"""Temporal's external storage (the SDK's claim check) over our content store.

The SDK hands a driver every payload its `ExternalStorage` decides to keep out of history and puts
a small reference in history instead; workers and clients that carry the same driver read the
payload back transparently, so workflow code, queries and reports see the real values. Backing
the driver with the content store keeps one store, one retention rule and one content address
(a retried activity stores the same bytes under the same key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from turnkeeper.payloads.content_store import ContentStore

_REF: Final = "ref"


class ContentStoreDriver(StorageDriver):
    """Stores each payload, serialized, under its SHA-256 in a `ContentStore`."""

    def __init__(self, store: ContentStore, name: str = "turnkeeper") -> None:
        self._store = store
        self._name = name

    @property
    def content_store(self) -> ContentStore:
        """The store the driver keeps payloads in."""
        return self._store

    def name(self) -> str:
        return self._name

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return [
            StorageDriverClaim({_REF: await self._store.put(payload.SerializeToString())})
            for payload in payloads
        ]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return [
            Payload.FromString(await self._store.get(claim.claim_data[_REF])) for claim in claims
        ]


def store_of(converter: DataConverter) -> ContentStore | None:
    """The content store of a converter made by `turn_data_converter`; None for another one."""
    storage = converter.external_storage
    for driver in storage.drivers if storage is not None else ():
        if isinstance(driver, ContentStoreDriver):
            return driver.content_store
    return None
