"""`turnkeeper codec-server`: Temporal's remote codec protocol, so the Web UI and the `temporal`
CLI show decrypted content, with external-storage references resolved to what they stand for.

`POST /encode`, `/decode` and `/download` take and return proto-JSON `Payloads`
(`{"payloads": [{"metadata": {…}, "data": "<base64>"}]}`). `/decode` resolves references unless
`?preserveStorageRefs=true` (which the Web UI sends, then fetching a reference's content through
`/download` when its download button is pressed). It can decrypt everything the server holds:
it answers only for the namespaces it serves (the `X-Namespace` header is required), to callers
with the bearer token (`TURNKEEPER_CODEC_TOKEN`), and refuses to listen beyond loopback without
one. Without a token it also answers only requests whose `Host` is a name it serves: a web page
whose own name an attacker's DNS points at 127.0.0.1 (DNS rebinding) is same-origin with the
codec server as far as the browser knows, and would otherwise read whatever it decrypts.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
)

from turnkeeper.devtools.codec_errors import CodecServerError
from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.content_store import ContentMissingError, ContentStore
from turnkeeper.payloads.encrypted_store import ContentCorruptedError
from turnkeeper.payloads.encryption_codec import EncryptionCodec
from turnkeeper.payloads.keyring import Keyring, UnreadableContentError
from turnkeeper.payloads.payload_driver import ContentStoreDriver

CODEC_TOKEN_ENV: Final = "TURNKEEPER_CODEC_TOKEN"
DEFAULT_CODEC_HOST: Final = "127.0.0.1"
DEFAULT_CODEC_PORT: Final = 8081
DEFAULT_UI_ORIGIN: Final = "http://localhost:8233"
# The Web UI and the temporal CLI send the payloads of one field per request: under Temporal's
# 2 MiB blob limit (4 MiB for a whole gRPC message), so under 6 MiB as base64 in proto-JSON.
MAX_REQUEST_BYTES: Final = 8 * 1024 * 1024
# Parsing costs per payload (100,000 tiny ones took 5 s) and each reference is a store read.
MAX_PAYLOADS_PER_REQUEST: Final = 1000
# The names any loopback codec server answers to, besides the address it listens on.
LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})  # every interface: no name of its own
_REFERENCE_TYPE: Final = ExternalStorageReference.DESCRIPTOR.full_name.encode()
_ALLOWED_HEADERS: Final = "Content-Type, X-Namespace, Authorization, Authorization-Extras"

log = get_logger(__name__)


class UnresolvableReferenceError(ValueError):
    """A storage reference names nothing this server can read; the message names no path."""


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
        """Decrypted `payloads`, references resolved when `resolve`.

        Raises:
            UnresolvableReferenceError: A reference is malformed or its content is not stored.
            UnreadableContentError: Content is encrypted with a key this server lacks.
        """
        decoded = []
        for index, payload in enumerate(payloads):
            try:
                decoded.append(await self._decode_one(payload, resolve=resolve))
            except UnresolvableReferenceError as error:
                message = f"payload {index} cannot be resolved: {error}"
                raise UnresolvableReferenceError(message) from None
        return decoded

    async def _decode_one(self, payload: Payload, *, resolve: bool) -> Payload:
        decoded = self.codec.decrypt(payload)
        if not resolve:
            return decoded  # a kept reference is not even parsed
        reference = self._reference(decoded)
        if reference is None:
            return decoded
        return self.codec.decrypt(await self._retrieve(reference))

    async def _retrieve(self, reference: ExternalStorageReference) -> Payload:
        # The store's own messages name its folder or bucket: the caller is told the kind only.
        claim = StorageDriverClaim(claim_data=dict(reference.claim_data))
        try:
            [stored] = await self.driver.retrieve(StorageDriverRetrieveContext(), [claim])
        except KeyError:
            raise UnresolvableReferenceError("it names no content") from None
        except ContentCorruptedError:
            raise UnresolvableReferenceError("its stored content does not match it") from None
        except ContentMissingError:
            raise UnresolvableReferenceError("the content store has nothing under it") from None
        except DecodeError:
            raise UnresolvableReferenceError("its stored content is not a payload") from None
        return stored

    @classmethod
    def over(cls, store: ContentStore, keyring: Keyring) -> CodecService:
        """The service for the converter `turn_data_converter(store, keyring)` builds."""
        return cls(EncryptionCodec(keyring), ContentStoreDriver(store))

    def _reference(self, payload: Payload) -> ExternalStorageReference | None:
        """The storage reference `payload` is, when it is one of this driver's."""
        if payload.metadata.get("messageType") != _REFERENCE_TYPE:
            return None
        reference = ExternalStorageReference()
        try:
            json_format.Parse(payload.data, reference, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError):
            raise UnresolvableReferenceError("it is not a storage reference") from None
        return reference if reference.driver_name == self.driver.name() else None


@dataclass(frozen=True)
class Access:
    """Who may call: the namespaces served, the token required (None: none), the Web UI origins
    whose pages may call from the browser, and the host names served besides the loopback ones
    and the listening address (`--allowed-host`; with a token and none listed, any `Host`)."""

    namespaces: frozenset[str]
    token: str | None
    ui_origins: frozenset[str]
    hosts: frozenset[str] = field(default_factory=frozenset)


def codec_app(
    service: CodecService, access: Access, *, listening_on: str = DEFAULT_CODEC_HOST
) -> web.Application:
    """The codec endpoints behind their guards; `listening_on` is the address served on."""
    app = web.Application(
        client_max_size=MAX_REQUEST_BYTES,
        middlewares=[_host_check(access, listening_on), _cors(access), _guard(access)],
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


def _host_check(
    access: Access, listening_on: str
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    # Outermost, before CORS: a rebinding page is same-origin, so no CORS header would stop it.
    served = LOOPBACK_NAMES | _names({listening_on} - _WILDCARDS) | _names(access.hosts)
    checked = access.token is None or bool(access.hosts)

    @web.middleware
    async def host_check(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if checked and _host_name(host) not in served:
            log.warning("codec request refused: host not served", host=host[:200])
            return _error_response(
                web.HTTPForbidden,
                f"{host[:200]!r} is not a name this codec server answers to "
                "(turnkeeper codec-server --allowed-host NAME adds one)",
            )
        return await handler(request)

    return host_check


def _host_name(host: str) -> str | None:
    """The lower-case name of a `Host` header value or listening address, without its port."""
    try:
        name = urlsplit(f"//{host}").hostname
    except ValueError:
        return None
    return name.rstrip(".") if name else None


def _names(hosts: Set[str]) -> frozenset[str]:
    return frozenset(name for host in hosts if (name := _host_name(host)))


def _guard(access: Access) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS" or request.path == "/":
            return await handler(request)
        if access.token is not None and not _bearer_matches(request, access.token):
            log.warning("codec request refused: no valid token", path=request.path)
            raise _error(web.HTTPUnauthorized, "a valid bearer token is required")
        # Required, as the Web UI and the temporal CLI always send it: a custom header also
        # makes every cross-origin browser request ask first (a CORS preflight).
        namespace = request.headers.get("X-Namespace")
        if not namespace:
            raise _error(web.HTTPBadRequest, "the X-Namespace header is required")
        if namespace not in access.namespaces:
            log.warning("codec request refused: namespace not served", namespace=namespace)
            raise _error(web.HTTPForbidden, f"namespace {namespace!r} is not served here")
        try:
            return await handler(request)
        except UnreadableContentError as error:
            raise _error(web.HTTPUnprocessableEntity, str(error)) from None
        except UnresolvableReferenceError as error:
            log.warning("codec request refused: unresolvable reference", reason=str(error))
            raise _error(web.HTTPUnprocessableEntity, str(error)) from None

    return guard


def _bearer_matches(request: web.Request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


async def _payloads(request: web.Request) -> list[Payload]:
    # Plain JSON first (fast, in C), so the count is known before protobuf builds each payload.
    try:
        body: Any = json.loads(await request.text())
        _check_count(body)
        message = json_format.ParseDict(body, Payloads(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError) as error:
        raise _error(web.HTTPBadRequest, f"the body is not proto-JSON Payloads: {error}") from None
    return list(message.payloads)


def _check_count(body: Any) -> None:
    payloads = body.get("payloads") if isinstance(body, dict) else None
    if isinstance(payloads, list) and len(payloads) > MAX_PAYLOADS_PER_REQUEST:
        message = f"at most {MAX_PAYLOADS_PER_REQUEST} payloads are decoded per request"
        raise web.HTTPRequestEntityTooLarge(
            max_size=MAX_PAYLOADS_PER_REQUEST,
            actual_size=len(payloads),
            text=json.dumps({"message": message}),
            content_type="application/json",
        )


def _payloads_response(payloads: Sequence[Payload]) -> web.Response:
    body = json_format.MessageToJson(Payloads(payloads=payloads), indent=None)
    return web.Response(text=body, content_type="application/json")


def _error(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    return kind(text=json.dumps({"message": message}), content_type="application/json")


def _error_response(kind: type[web.HTTPException], message: str) -> web.Response:
    return web.json_response({"message": message}, status=kind.status_code)


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
    runner = web.AppRunner(codec_app(service, access, listening_on=host), access_log=None)
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
