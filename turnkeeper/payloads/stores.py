"""The content store a deployment names: where the environment puts it, and the one place that
turns a location into a store."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from turnkeeper.payloads.content_store import ContentStore, LocalFolderStore
from turnkeeper.payloads.encrypted_store import encrypting
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.s3_store import S3Store

DATA_DIR_ENV = "TURNKEEPER_DATA_DIR"
STORE_DIR_ENV = "TURNKEEPER_STORE_DIR"
STORE_URL_ENV = "TURNKEEPER_STORE_URL"

DEFAULT_DATA_DIR = "./.turnkeeper"


class StoreLocationError(ValueError):
    """`TURNKEEPER_STORE_URL` does not name a store; the message says what it must look like."""


class StoreLocation(Protocol):
    """Where a deployment keeps its content: the two fields that name a store, of the worker's
    settings or of `StoreSettings`. A protocol, so that activities and the client never import
    the settings of the runtime above them.

    Attributes:
        store_url: `s3://bucket[/prefix]`, or None for the local folder.
        store_dir: The local folder of the store when `store_url` is None.
    """

    @property
    def store_url(self) -> str | None: ...

    @property
    def store_dir(self) -> Path: ...


@dataclass(frozen=True)
class StoreSettings:
    """The store's variables of the environment, read by every client and worker alike so that
    they name the same store; a client reads these and none of the worker's other settings.

    Attributes:
        data_dir: Local state (`TURNKEEPER_DATA_DIR`); the store's folder is in it by default.
        store_dir: The local folder of the store (`TURNKEEPER_STORE_DIR`).
        store_url: A store shared by every host, `s3://bucket[/prefix]`
            (`TURNKEEPER_STORE_URL`); None: the local folder.
    """

    data_dir: Path
    store_dir: Path
    store_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StoreSettings:
        """Read them from `env` (default: the process environment); an empty variable counts
        as unset. Paths are resolved now, so that a later `chdir` cannot move the store."""
        source = os.environ if env is None else env
        data_dir = _absolute(source.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)
        store_dir = source.get(STORE_DIR_ENV)
        return cls(
            data_dir=data_dir,
            store_dir=_absolute(store_dir) if store_dir else data_dir / "store",
            store_url=source.get(STORE_URL_ENV) or None,
        )


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


def _absolute(path: str) -> Path:
    return Path(path).expanduser().resolve()
