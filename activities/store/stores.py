"""The content store a deployment names: one place that turns settings into a store."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from turnkeeper.activities.store.content_store import ContentStore, LocalFolderStore
from turnkeeper.activities.store.encrypted_store import encrypting
from turnkeeper.activities.store.keyring import Keyring
from turnkeeper.activities.store.s3_store import S3Store

if TYPE_CHECKING:
    from turnkeeper.settings import Settings


def open_store(settings: Settings, keyring: Keyring | None = None) -> ContentStore:
    """The store `settings` name, encrypting with `keyring` (default: the environment's keys)."""
    if settings.store_url:
        store = _store_at(settings.store_url)
    else:
        store = LocalFolderStore(settings.store_dir)
    return encrypting(store, Keyring.from_env() if keyring is None else keyring)


def _store_at(url: str) -> ContentStore:
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        # The URL itself stays out of the message: a mistyped one could carry credentials.
        raise ValueError("TURNKEEPER_STORE_URL must be s3://bucket or s3://bucket/prefix")
    return S3Store(bucket=parts.netloc, prefix=parts.path.lstrip("/"))
