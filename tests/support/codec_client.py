"""A client of a running codec server, as the Web UI (or an attacker's page) talks to it: POSTs
of payloads as JSON, with the headers a test chooses (`Host`, `X-Namespace`, a token)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads


def payloads_json(payloads: list[Payload]) -> str:
    """A request body of the codec server's protocol."""
    return json_format.MessageToJson(Payloads(payloads=payloads))


@dataclass(frozen=True)
class Codec:
    url: str
    store_root: Path
    encrypted: Payload

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None
        return port

    async def post(self, path: str, body: str | bytes, headers: dict[str, str]) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{self.url}{path}",
                data=body,
                headers={"Content-Type": "application/json", **headers},
            ) as response,
        ):
            return response.status, await response.text()

    async def decode(self, payloads: list[Payload], **headers: str) -> tuple[int, str]:
        sent = {"Host": f"127.0.0.1:{self.port}", "X-Namespace": "default", **headers}
        return await self.post(
            "/decode", payloads_json(payloads), {k: v for k, v in sent.items() if v}
        )
