"""The cassette around a worker's providers: in `record` mode every model call goes to the real
provider and the exchange is appended to the cassette; in `replay` mode every call is answered
from the cassette and no provider is reached. A call the cassette lacks fails the turn at once
(`CassetteMiss`, not retried) with the cassette's path and the first difference from the nearest
recorded call.

Here, at the provider seam, both the Anthropic and the OpenAI-compatible paths (and every named
endpoint) are covered, and what is recorded is what the provider is sent, without headers.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from turnkeeper.activities.credentials import secrets_in_use
from turnkeeper.activities.providers import cassette_file
from turnkeeper.activities.providers.cassette_file import Exchange
from turnkeeper.activities.providers.cassette_key import (
    nearest_difference,
    request_key,
    request_record,
)
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    TextSink,
    estimate_input_tokens,
    media_types,
    reports_cost,
)
from turnkeeper.contracts.errors import CASSETTE_MISS

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

CassetteMode = Literal["record", "replay"]
CASSETTE_MODES: Final = ("record", "replay")
# Environment variables whose values are credentials by their names; values shorter than this
# are flags or numbers, and redacting them would garble the recording.
_SECRET_NAME_PARTS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
_SHORTEST_SECRET: Final = 8


@dataclass(frozen=True)
class CassetteSettings:
    """A worker's cassette: its file and its mode."""

    path: Path
    mode: CassetteMode


def environment_secrets(env: Mapping[str, str]) -> list[str]:
    """Values of the environment variables named like credentials (`ANTHROPIC_API_KEY`,
    a named endpoint's `api_key_env`, `TURNKEEPER_ENCRYPTION_KEYS`, …): what a recorded line
    must never hold, should a prompt or an answer quote one."""
    return [
        value
        for name, value in env.items()
        if len(value) >= _SHORTEST_SECRET
        and any(part in name.upper() for part in _SECRET_NAME_PARTS)
    ]


class Cassette:
    """One cassette file, shared by every provider of the worker."""

    def __init__(self, settings: CassetteSettings, secrets: list[str] | None = None) -> None:
        """Reads the file now, so that a file that is not a cassette stops the worker at start.

        Raises:
            CassetteFormatError: The file is not a cassette, or (replay) there is none.
        """
        self.settings = settings
        recording = settings.mode == "record"
        self._exchanges = cassette_file.load(settings.path, missing_ok=recording)
        if recording:
            cassette_file.create_if_missing(settings.path)
        self._by_key = {}
        for exchange in self._exchanges:
            self._by_key.setdefault(exchange.key, exchange)
        self._secrets = environment_secrets(os.environ) if secrets is None else secrets
        # Said once at start: a worker that replays answers no call from its provider.
        log.info(
            "cassette", path=str(settings.path), mode=settings.mode, recorded=len(self._exchanges)
        )

    def recorded(self, key: str) -> Exchange:
        """The exchange first recorded for `key`.

        Raises:
            KeyError: The cassette holds no call with that key.
        """
        exchange = self._by_key.get(key)
        if exchange is None:
            raise KeyError(key)
        return exchange

    def miss(self, record: dict[str, object]) -> ModelCallError:
        """The failure for a call the cassette lacks, naming the first difference."""
        path = self.settings.path
        difference = nearest_difference(record, (e.request for e in self._exchanges))
        where = (
            f"; the nearest recorded call differs {difference}"
            if difference
            else "; it holds no calls"
        )
        return ModelCallError(
            f"cassette {path} has no recorded call for this model call "
            f"({len(self._exchanges)} recorded){where}",
            error_type=CASSETTE_MISS,
            retryable=False,
        )

    async def record(self, exchange: Exchange) -> None:
        """Appends `exchange` to the file (off the event loop: the lock may wait)."""
        # Keys read from a file or a command are in no variable: asked for at each write,
        # since they rotate.
        secrets = [*self._secrets, *secrets_in_use()]
        appended = await asyncio.to_thread(
            cassette_file.append, self.settings.path, exchange, secrets
        )
        if appended:
            self._exchanges.append(exchange)
            self._by_key.setdefault(exchange.key, exchange)


class CassetteProvider:
    """A `ModelProvider` that records the calls of `inner` or replays them (see module doc)."""

    def __init__(self, name: str, inner: ModelProvider, cassette: Cassette) -> None:
        self.name = name
        self._inner = inner
        self._cassette = cassette
        # A recorded answer keeps the cost the endpoint reported, so replay prices it the same.
        self.reports_cost = reports_cost(inner)
        self.media_types = media_types(inner)

    @property
    def _replaying(self) -> bool:
        return self._cassette.settings.mode == "replay"

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        record = request_record(self.name, request)
        key = request_key(record)
        if self._replaying:
            return self._replay(key, record, on_text)
        pieces: list[str] = []

        def capture(text: str) -> None:
            pieces.append(text)
            if on_text is not None:
                on_text(text)

        response = await self._inner.complete(request, capture if on_text else None)
        await self._cassette.record(Exchange(key, record, response, pieces))
        return response

    def _replay(
        self, key: str, record: dict[str, object], on_text: TextSink | None
    ) -> ModelResponse:
        try:
            exchange = self._cassette.recorded(key)
        except KeyError:
            raise self._cassette.miss(record) from None
        if on_text is not None:
            # Recorded without streaming: the answer's text as one piece, so a streaming turn
            # still sees its text arrive.
            pieces = exchange.text or [
                text for block in exchange.response.content if (text := getattr(block, "text", ""))
            ]
            for piece in pieces:
                on_text(piece)
        return exchange.response.model_copy(deep=True)

    async def count_input_tokens(self, request: ModelRequest) -> int:
        """Replay: the input tokens the recorded answer billed (no provider is reached)."""
        if not self._replaying:
            return await self._inner.count_input_tokens(request)
        record = request_record(self.name, request)
        try:
            return self._cassette.recorded(request_key(record)).response.usage.input_tokens
        except KeyError:
            return estimate_input_tokens(request)  # the call itself then fails, naming why


def with_cassette(
    providers: Mapping[str, ModelProvider], settings: CassetteSettings | None
) -> dict[str, ModelProvider]:
    """`providers`, each behind the cassette of `settings` (unchanged when None).

    Raises:
        CassetteFormatError: The file is not a cassette, or (replay) there is none.
    """
    if settings is None:
        return dict(providers)
    cassette = Cassette(settings)
    return {
        name: inner if _scripted(inner) else CassetteProvider(name, inner, cassette)
        for name, inner in providers.items()
    }


def _scripted(provider: ModelProvider) -> bool:
    """A model that answers from a test's own script (`turnkeeper.testing.ScriptedModel`): it is
    offline and deterministic already, and a suite that replays a cassette for its real-model
    tests runs its scripted tests beside them unchanged."""
    return getattr(provider, "scripted", False) is True
