"""The `store_attachments` activity: a request's attachments that reached the worker with their
bytes (the `temporal` CLI's base64 blocks) or by URL are checked and stored, so that the turn
goes on with their references only.

URLs are fetched only from hosts the operator lists in `TURNKEEPER_ATTACHMENT_URL_HOSTS` (none by
default): a request must not make the worker reach into a network the caller cannot.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx2
from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.attachment_io import StoreAttachmentsInput, StoreAttachmentsResult
from turnkeeper.contracts.attachments import (
    URL_HOSTS_ENV,
    AttachmentBlock,
    AttachmentLimits,
    UrlSource,
)
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.names import ACTIVITY_STORE_ATTACHMENTS

from turnkeeper.payloads.attachments import AttachmentRefused, Loaded, load_base64, store_blocks
from turnkeeper.payloads.content_store import ContentStore

_FETCH_TIMEOUT_S = 30.0


class AttachmentActivities:
    """Args:
    store: The content store of the worker's turns.
    limits: The operator's attachment limits.
    url_hosts: The hosts URL sources may name; empty: URL sources are refused.
    """

    def __init__(
        self, store: ContentStore, limits: AttachmentLimits, url_hosts: frozenset[str]
    ) -> None:
        self._store = store
        self._limits = limits
        self._url_hosts = url_hosts

    @activity.defn(name=ACTIVITY_STORE_ATTACHMENTS)
    async def store_attachments(self, given: StoreAttachmentsInput) -> StoreAttachmentsResult:
        """Raises ApplicationError InvalidTurnRequest (not retried) naming the attachment and
        the limit or type at fault; nothing is stored then."""
        try:
            blocks = await store_blocks(
                given.blocks, self._store, self._limits, set(given.providers), self._read
            )
        except AttachmentRefused as err:
            raise ApplicationError(
                f"invalid turn request: task.input: {err}",
                type=INVALID_TURN_REQUEST,
                non_retryable=True,
            ) from None
        return StoreAttachmentsResult(blocks=blocks)

    async def _read(self, block: AttachmentBlock, label: str) -> Loaded:
        if isinstance(block.source, UrlSource):
            return await self._fetch(block.source, label)
        return await load_base64(block, label)

    async def _fetch(self, source: UrlSource, label: str) -> Loaded:
        host = urlsplit(source.url).hostname or ""
        if host not in self._url_hosts:
            raise AttachmentRefused(
                f"{label}: the worker fetches URLs only from the hosts {URL_HOSTS_ENV} lists, "
                f"and {host!r} is not one of them"
            )
        # Redirects are not followed: they could lead to a host the operator did not list.
        async with httpx2.AsyncClient(timeout=_FETCH_TIMEOUT_S) as http:
            answer = await http.get(source.url)
        if answer.status_code != 200:
            raise AttachmentRefused(f"{label}: {host} answered {answer.status_code}")
        declared = answer.headers.get("content-type", "").split(";")[0].strip() or None
        name = urlsplit(source.url).path.rsplit("/", 1)[-1] or None
        return Loaded(answer.content, declared, name)
