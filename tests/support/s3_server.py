"""A real S3-compatible HTTP server (moto's) on a free local port, and small bucket helpers built on
the same aioboto3 client the S3 store uses."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import aioboto3
import pytest
from moto.server import ThreadedMotoServer

# Set so that no real credentials, profile or endpoint of the machine can reach the tests.
_DUMMY_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
_UNSET_AWS = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL_S3")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def moto_s3() -> Iterator[str]:
    """Runs the server and points boto3 at it through `AWS_ENDPOINT_URL`, the way a deployment
    would name MinIO or R2; yields the endpoint."""
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    endpoint = f"http://127.0.0.1:{port}"
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in _DUMMY_AWS.items():
            monkeypatch.setenv(name, value)
        for name in _UNSET_AWS:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        server.start()
        try:
            yield endpoint
        finally:
            server.stop()


async def create_bucket(endpoint: str) -> str:
    name = f"tk-{uuid.uuid4().hex[:16]}"
    async with aioboto3.Session().client("s3", endpoint_url=endpoint) as s3:
        await s3.create_bucket(Bucket=name)
    return name


async def bucket_objects(endpoint: str, bucket: str) -> dict[str, bytes]:
    """Every object of a bucket, by key."""
    objects: dict[str, bytes] = {}
    async with aioboto3.Session().client("s3", endpoint_url=endpoint) as s3:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        async for page in pages:
            for entry in page.get("Contents", []):
                response = await s3.get_object(Bucket=bucket, Key=entry["Key"])
                objects[entry["Key"]] = await response["Body"].read()
    return objects
