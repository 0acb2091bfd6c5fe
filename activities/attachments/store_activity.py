"""The `store_attachments` activity: a request's attachments that reached the worker with their
bytes (the `temporal` CLI's base64 blocks) or by URL are checked and stored, so that the turn
goes on with their references only.

URLs are fetched only from hosts the operator lists in `TURNKEEPER_ATTACHMENT_URL_HOSTS` (none by
default): a request must not make the worker reach into a network the caller cannot.
"""

from __future__ import annotations

from typing import NoReturn
from urllib.parse import urlsplit

import httpx2
from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.contracts.attachment_io import StoreAttachmentsInput, StoreAttachmentsResult
from turnkeeper.contracts.attachments import (
    MAX_BYTES_ENV,
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
        try:
            return await self._download(source, host, label)
        except httpx2.TransportError as err:
            _again_or_refuse(f"{label}: {host} could not be reached ({type(err).__name__}: {err})")

    async def _download(self, source: UrlSource, host: str, label: str) -> Loaded:
        limit = self._limits.max_bytes
        # Streamed, and read no further than the limit: a host may send a body of any size (or
        # one that never ends), and the worker's memory must not be what finds out.
        # Redirects are not followed: they could lead to a host the operator did not list.
        async with (
            httpx2.AsyncClient(timeout=_FETCH_TIMEOUT_S) as http,
            http.stream("GET", source.url) as answer,
        ):
            _check_answer(answer.status_code, host, label)
            declared_size = answer.headers.get("content-length", "")
            if declared_size.isdigit() and int(declared_size) > limit:
                raise AttachmentRefused(
                    f"{label}: {host} says it is {declared_size} bytes, over the {limit}-byte "
                    f"limit of one attachment ({MAX_BYTES_ENV}); nothing more was read"
                )
            data = bytearray()
            async for chunk in answer.aiter_bytes():
                data += chunk
                if len(data) > limit:
                    raise AttachmentRefused(
                        f"{label}: {host} sent more than the {limit}-byte limit of one "
                        f"attachment ({MAX_BYTES_ENV}); the download was stopped there"
                    )
            declared = answer.headers.get("content-type", "").split(";")[0].strip() or None
        name = urlsplit(source.url).path.rsplit("/", 1)[-1] or None
        return Loaded(bytes(data), declared, name)


def _check_answer(status: int, host: str, label: str) -> None:
    """A URL's answer that carries no attachment refuses the block, but for a server error or a
    rate limit, which may pass: the activity's retries ask again."""
    if status == 200:
        return
    if status >= 500 or status == 429:
        _again_or_refuse(f"{label}: {host} answered {status}")
    if 300 <= status < 400:
        raise AttachmentRefused(
            f"{label}: {host} answered {status}, a redirect, which the worker does not follow "
            "(it could lead to a host the operator did not list); send the final URL"
        )
    raise AttachmentRefused(f"{label}: {host} answered {status}")


def _again_or_refuse(problem: str) -> NoReturn:
    """A host that may answer later: a plain error, which the activity's retries try again, but
    on the last attempt a refusal, so that the turn says what the host did rather than failing
    as if the worker had a defect."""
    info = activity.info()
    attempts = info.retry_policy.maximum_attempts if info.retry_policy else 0
    if attempts and info.attempt >= attempts:
        raise AttachmentRefused(
            f"{problem}, on each of {attempts} attempts; send it again later, or attach the "
            "file itself"
        )
    raise RuntimeError(problem)
