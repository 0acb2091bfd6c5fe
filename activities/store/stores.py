"""The content store a deployment names: one place that turns settings into a store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from activities.store.content_store import ContentStore, LocalFolderStore

if TYPE_CHECKING:
    from turnkeeper.settings import Settings


def open_store(settings: Settings) -> ContentStore:
    return LocalFolderStore(settings.store_dir)
