"""The content store on S3 or any S3-compatible service (MinIO, R2, Ceph, ...), so that every
worker and client of a cluster, on whatever host, reads and writes one store.

Built on Temporal's aioboto3 adapter. The endpoint, region and credentials come from boto3's
own configuration (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, profiles, instance
roles, ...): this module never reads a secret. aioboto3 ships in the `s3` extra and is imported
only when an S3 store is made, so deployments on the local folder store do without it.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Final

from turnkeeper.payloads.content_store import ContentMissingError, content_ref, hex_digest

if TYPE_CHECKING:
    from temporalio.contrib.aws.s3driver import S3StorageDriverClient

# turnkeeper is installed from a checkout or a git URL, not from a package index.
MISSING_EXTRA: Final = (
    "TURNKEEPER_STORE_URL names an S3 store, which needs the s3 extra: pip install -e '.[s3]' in "
    "a turnkeeper checkout, or pip install 'temporalio[aioboto3]'"
)
# GetObject's code for an absent key; NoSuchBucket and AccessDenied mean a broken store instead.
_NO_SUCH_KEY: Final = "NoSuchKey"


class S3Store:
    """One object per content reference, under `{prefix}sha256/{hex digest}` in a bucket."""

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None) -> None:
        _require_s3_extra()
        self.bucket = bucket
        self.prefix = prefix if not prefix or prefix.endswith("/") else f"{prefix}/"
        self.endpoint_url = endpoint_url
        self._client: S3StorageDriverClient | None = None
        self._resources = AsyncExitStack()
        # Concurrent first uses must share one client rather than each open (and leak) their own.
        self._opening = asyncio.Lock()

    def key(self, ref: str) -> str:
        return f"{self.prefix}sha256/{hex_digest(ref)}"

    async def put(self, data: bytes) -> str:
        ref = content_ref(data)
        # Content-addressed: a repeated put rewrites the same bytes, so no existence check first.
        client = await self._s3()
        await client.put_object(bucket=self.bucket, key=self.key(ref), data=data)
        return ref

    async def get(self, ref: str) -> bytes:
        key = self.key(ref)
        client = await self._s3()
        try:
            return await client.get_object(bucket=self.bucket, key=key)
        except Exception as err:
            if not _is_missing_key(err):
                raise
            raise ContentMissingError(
                f"content {ref} is not in the store at s3://{self.bucket}/{key}"
            ) from err

    async def aclose(self) -> None:
        """Closes the connection pool; a later put or get opens a new one."""
        async with self._opening:
            self._client = None
            resources, self._resources = self._resources, AsyncExitStack()
            await resources.aclose()

    async def _s3(self) -> S3StorageDriverClient:
        if self._client is None:
            async with self._opening:
                if self._client is None:
                    self._client = await self._open()
        return self._client

    async def _open(self) -> S3StorageDriverClient:
        import aioboto3
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client

        s3 = await self._resources.enter_async_context(
            aioboto3.Session().client("s3", endpoint_url=self.endpoint_url)
        )
        return new_aioboto3_client(s3)

    def __repr__(self) -> str:
        return f"S3Store(s3://{self.bucket}/{self.prefix})"


def _require_s3_extra() -> None:
    """Fails when the store is made (at worker start) rather than on a turn's first put."""
    try:
        import aioboto3  # noqa: F401
        import temporalio.contrib.aws.s3driver.aioboto3  # noqa: F401
    except ImportError as err:
        raise RuntimeError(MISSING_EXTRA) from err


def _is_missing_key(err: Exception) -> bool:
    from botocore.exceptions import ClientError

    if not isinstance(err, ClientError):
        return False
    return err.response.get("Error", {}).get("Code") == _NO_SUCH_KEY
