"""`turnkeeper codec-server`: Temporal's remote codec protocol, so the Web UI and the `temporal`
CLI show decrypted content, with external-storage references resolved to what they stand for.

`POST /encode`, `/decode` and `/download` take and return proto-JSON `Payloads`
(`{"payloads": [{"metadata": {…}, "data": "<base64>"}]}`). `/decode` resolves references unless
`?preserveStorageRefs=true` (which the Web UI sends, then fetching a reference's content through
`/download` when its download button is pressed). It can decrypt everything the server holds:
it answers only for the namespaces it serves, to callers with the bearer token
(`TURNKEEPER_CODEC_TOKEN`), and refuses to listen beyond loopback without one.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from aiohttp import web
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
)

from turnkeeper.activities.logs import get_logger
from turnkeeper.activities.store.content_store import ContentStore
from turnkeeper.activities.store.encryption_codec import EncryptionCodec
from turnkeeper.activities.store.keyring import Keyring, UnreadableContentError
from turnkeeper.activities.store.payload_driver import ContentStoreDriver

CODEC_TOKEN_ENV: Final = "TURNKEEPER_CODEC_TOKEN"
DEFAULT_CODEC_HOST: Final = "127.0.0.1"
DEFAULT_CODEC_PORT: Final = 8081
DEFAULT_UI_ORIGIN: Final = "http://localhost:8233"
# A workflow's history can hold many payloads of up to 2 MiB each in one request.
MAX_REQUEST_BYTES: Final = 64 * 1024 * 1024
_REFERENCE_TYPE: Final = ExternalStorageReference.DESCRIPTOR.full_name.encode()
_ALLOWED_HEADERS: Final = "Content-Type, X-Namespace, Authorization, Authorization-Extras"

log = get_logger(__name__)


class CodecServerError(RuntimeError):
    """The codec server cannot start as configured (the message says what to change)."""


@dataclass(frozen=True)
class CodecService:
    """What the endpoints do, without HTTP.

    Attributes:
        codec: The deployment's encryption codec (its keyring may be empty).
        driver: The external-storage driver the data converter stores large payloads with.
    """

    codec: EncryptionCodec
    driver: StorageDriver

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await self.codec.encode(payloads)

    async def decode(self, payloads: Sequence[Payload], *, resolve: bool) -> list[Payload]:
        return [await self._decode_one(payload, resolve=resolve) for payload in payloads]

    async def _decode_one(self, payload: Payload, *, resolve: bool) -> Payload:
        decoded = self.codec.decrypt(payload)
        reference = self._reference(decoded)
        if reference is None or not resolve:
            return decoded
        claim = StorageDriverClaim(claim_data=dict(reference.claim_data))
        [stored] = await self.driver.retrieve(StorageDriverRetrieveContext(), [claim])
        return self.codec.decrypt(stored)

    @classmethod
    def over(cls, store: ContentStore, keyring: Keyring) -> CodecService:
        """The service for the converter `turn_data_converter(store, keyring)` builds."""
        return cls(EncryptionCodec(keyring), ContentStoreDriver(store))

    def _reference(self, payload: Payload) -> ExternalStorageReference | None:
        """The storage reference `payload` is, when it is one of this driver's."""
        if payload.metadata.get("messageType") != _REFERENCE_TYPE:
            return None
        reference = ExternalStorageReference()
        json_format.Parse(payload.data, reference, ignore_unknown_fields=True)
        return reference if reference.driver_name == self.driver.name() else None


@dataclass(frozen=True)
class Access:
    """Who may call: the namespaces served, the token required (None: none), and the Web UI
    origins whose pages may call from the browser."""

    namespaces: frozenset[str]
    token: str | None
    ui_origins: frozenset[str]


def codec_app(service: CodecService, access: Access) -> web.Application:
    app = web.Application(
        client_max_size=MAX_REQUEST_BYTES, middlewares=[_cors(access), _guard(access)]
    )

    async def encode(request: web.Request) -> web.Response:
        return _payloads_response(await service.encode(await _payloads(request)))

    async def decode(request: web.Request) -> web.Response:
        preserve = request.query.get("preserveStorageRefs", "").lower() == "true"
        payloads = await _payloads(request)
        return _payloads_response(await service.decode(payloads, resolve=not preserve))

    async def download(request: web.Request) -> web.Response:
        return _payloads_response(await service.decode(await _payloads(request), resolve=True))

    async def identify(_: web.Request) -> web.Response:
        return web.json_response({"service": "turnkeeper-codec-server"})

    app.router.add_post("/encode", encode)
    app.router.add_post("/decode", decode)
    app.router.add_post("/download", download)
    app.router.add_get("/", identify)
    return app


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _cors(access: Access) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    # Hand-written rather than aiohttp-cors: one origin (the Web UI's), and the headers must ride
    # on the guard's 401/403 answers too, so the browser shows the refusal instead of a CORS error.
    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS":  # the browser's preflight: no credentials to check
            response: web.StreamResponse = web.Response(status=204)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as error:
                # As a response, so the CORS headers reach the browser with the error too.
                response = web.Response(
                    status=error.status, text=error.text, content_type=error.content_type
                )
        origin = request.headers.get("Origin")
        if origin in access.ui_origins:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Allow-Credentials"] = "true"
            response.headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
            response.headers["Access-Control-Allow-Headers"] = _ALLOWED_HEADERS
            response.headers["Vary"] = "Origin"
        return response

    return cors


def _guard(access: Access) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS" or request.path == "/":
            return await handler(request)
        if access.token is not None and not _bearer_matches(request, access.token):
            log.warning("codec request refused: no valid token", path=request.path)
            raise _error(web.HTTPUnauthorized, "a valid bearer token is required")
        namespace = request.headers.get("X-Namespace")
        if namespace is not None and namespace not in access.namespaces:
            log.warning("codec request refused: namespace not served", namespace=namespace)
            raise _error(web.HTTPForbidden, f"namespace {namespace!r} is not served here")
        try:
            return await handler(request)
        except UnreadableContentError as error:
            raise _error(web.HTTPUnprocessableEntity, str(error)) from None

    return guard


def _bearer_matches(request: web.Request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


async def _payloads(request: web.Request) -> list[Payload]:
    try:
        message = json_format.Parse(await request.text(), Payloads(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError) as error:
        raise _error(web.HTTPBadRequest, f"the body is not proto-JSON Payloads: {error}") from None
    return list(message.payloads)


def _payloads_response(payloads: Sequence[Payload]) -> web.Response:
    body = json_format.MessageToJson(Payloads(payloads=payloads), indent=None)
    return web.Response(text=body, content_type="application/json")


def _error(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    return kind(text=json.dumps({"message": message}), content_type="application/json")


def check_exposure(host: str, token: str | None) -> None:
    """Raises `CodecServerError` for a codec server reachable beyond loopback with no token."""
    if token:
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise CodecServerError(
            f"the codec server decrypts everything: set {CODEC_TOKEN_ENV} to listen on {host} "
            f"(or listen on {DEFAULT_CODEC_HOST} only)"
        )


@contextlib.asynccontextmanager
async def running_codec_server(
    service: CodecService, access: Access, *, host: str, port: int
) -> AsyncIterator[str]:
    """Serves `service` on `host:port` (0: any free port) until the block ends; yields its URL.

    Raises:
        CodecServerError: It may not listen there without a token, or the port is taken.
    """
    check_exposure(host, access.token)
    runner = web.AppRunner(codec_app(service, access), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as error:
            raise CodecServerError(
                f"the codec server cannot listen on {host}:{port} ({error.strerror}); "
                "choose another port"
            ) from None
        bound_port = runner.addresses[0][1]
        url = f"http://{host}:{bound_port}"
        log.info("codec server started", url=url, namespaces=sorted(access.namespaces))
        yield url
    finally:
        await runner.cleanup()
