"""A model provider whose API key is read from a file or printed by a command, and read again
when the provider answers 401, the call then made once more with the new key.

Sources: a `TURNKEEPER_PROVIDERS` entry's `api_key_file` or `api_key_command`, and for the
built-in providers `ANTHROPIC_API_KEY_FILE` / `ANTHROPIC_API_KEY_COMMAND` and
`OPENAI_API_KEY_FILE` / `OPENAI_API_KEY_COMMAND`. The retry happens inside one `complete()`, so
the model-call activity sees one call: a 401 is answered before the model runs, so nothing was
billed for it, and the usage the turn records is the retry's alone. A second 401 (the source
still holds a refused key) fails the call as a refused key always has (`LLMAuthError`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from turnkeeper.activities.credentials import (
    CredentialError,
    CredentialSource,
    RotatingCredential,
    read_credential,
)
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    TextSink,
    media_types,
    reports_cost,
)
from turnkeeper.activities.providers.redaction import failure_without_secrets
from turnkeeper.contracts.errors import LLM_AUTH_ERROR

_UNAUTHORIZED = 401
FILE_SUFFIX = "_FILE"
COMMAND_SUFFIX = "_COMMAND"


class KeyedProvider(ModelProvider, Protocol):
    """A provider whose key can be replaced while it runs."""

    def use_key(self, api_key: str) -> None: ...


class RotatingKeyProvider:
    """`provider` with its key from `credential`, read again after a 401.

    Args:
        provider: the provider to call, built without a key (it gets one before its first call).
        credential: the key's source and cached value.
    """

    def __init__(self, provider: KeyedProvider, credential: RotatingCredential) -> None:
        self.name = provider.name
        self.reports_cost = reports_cost(provider)
        self.media_types = media_types(provider)
        self._provider = provider
        self._credential = credential
        self._in_use = -1  # the generation of the key the provider holds

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        key, generation = await self._keyed()
        try:
            return await self._provider.complete(request, on_text)
        except ModelCallError as err:
            refused = self._without_keys(err)
        if refused.status != _UNAUTHORIZED or not await self._renewed(key, generation):
            raise refused
        try:
            return await self._provider.complete(request, on_text)
        except ModelCallError as err:
            failure = self._without_keys(err)
        raise failure

    async def count_input_tokens(self, request: ModelRequest) -> int:
        await self._keyed()
        return await self._provider.count_input_tokens(request)

    async def aclose(self) -> None:
        close = getattr(self._provider, "aclose", None)
        if close is not None:
            await close()

    async def _keyed(self) -> tuple[str, int]:
        """Gives the provider the current key; the key and its generation."""
        try:
            key, generation = await self._credential.current()
        except CredentialError as err:
            raise _unreadable(err) from None
        self._use(key, generation)
        return key, generation

    async def _renewed(self, refused: str, refused_generation: int) -> bool:
        """Reads the key again after a 401; whether there is a new one to retry with (not when
        the source cannot be read or still holds the refused key: `RotatingCredential` logs
        which)."""
        try:
            key, generation = await self._credential.refreshed(refused_generation)
        except CredentialError:
            return False
        self._use(key, generation)
        return key != refused

    def _use(self, key: str, generation: int) -> None:
        if generation > self._in_use:
            self._provider.use_key(key)
            self._in_use = generation

    def _without_keys(self, err: ModelCallError) -> ModelCallError:
        # A body may echo a key sent before a rotation, which the provider no longer knows.
        return failure_without_secrets(err, self._credential.values_sent())


def _unreadable(err: CredentialError) -> ModelCallError:
    return ModelCallError(
        f"The API key cannot be read: {err}.", error_type=LLM_AUTH_ERROR, retryable=False
    )


def key_source_of_variable(variable: str, env: Mapping[str, str]) -> CredentialSource | None:
    """`<variable>_FILE` (a path) or `<variable>_COMMAND` (a command line, split as a shell
    would but run without one), e.g. `ANTHROPIC_API_KEY_FILE`; None when neither is set.

    Raises:
        CredentialError: more than one of `variable` and the two is set, or the command line
            cannot be split.
    """
    names = [variable, variable + FILE_SUFFIX, variable + COMMAND_SUFFIX]
    named = [name for name in names if env.get(name)]
    if len(named) > 1:
        raise CredentialError(f"{' and '.join(named)} are both set; keep one of them")
    file, command = env.get(names[1]), env.get(names[2])
    if file:
        return CredentialSource(file=Path(file))
    if not command:
        return None
    try:
        words = shlex.split(command)
    except ValueError as err:
        raise CredentialError(f"{names[2]}: cannot be split into words ({err})") from None
    if not words:
        raise CredentialError(f"{names[2]}: holds no command")
    return CredentialSource(command=words)


def checked_credential(source: CredentialSource, where: str) -> RotatingCredential:
    """A credential whose source was read once, now, so that a wrong one stops the worker at
    start rather than failing its first call.

    Raises:
        CredentialError: the source cannot be read; the message names `where`.
    """
    return RotatingCredential(source, where, value=read_credential(source, where))
