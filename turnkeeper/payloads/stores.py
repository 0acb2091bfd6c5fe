"""The content store a deployment names: one place that turns settings into a store."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from turnkeeper.payloads.content_store import ContentStore, LocalFolderStore
from turnkeeper.payloads.encrypted_store import encrypting
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.s3_store import S3Store


class StoreLocationError(ValueError):
    """`TURNKEEPER_STORE_URL` does not name a store; the message says what it must look like."""


class StoreLocation(Protocol):
    """Where a deployment keeps its content: the two fields of the worker's settings that name
    a store. A protocol, so that activities never import the settings of the runtime above them.

    Attributes:
        store_url: `s3://bucket[/prefix]`, or None for the local folder.
        store_dir: The local folder of the store when `store_url` is None.
    """

    @property
    def store_url(self) -> str | None: ...

    @property
    def store_dir(self) -> Path: ...


def open_store(location: StoreLocation, keyring: Keyring | None = None) -> ContentStore:
    """The store `location` names, encrypting with `keyring` (default: the environment's keys).

    Raises:
        StoreLocationError: `store_url` is not `s3://bucket[/prefix]`.
    """
    if location.store_url:
        store = _store_at(location.store_url)
    else:
        store = LocalFolderStore(location.store_dir)
    return encrypting(store, Keyring.from_env() if keyring is None else keyring)


def _store_at(url: str) -> ContentStore:
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        # The URL itself stays out of the message: a mistyped one could carry credentials.
        raise StoreLocationError("TURNKEEPER_STORE_URL must be s3://bucket or s3://bucket/prefix")
    return S3Store(bucket=parts.netloc, prefix=parts.path.lstrip("/"))
