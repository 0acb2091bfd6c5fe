"""The worker's model providers: the built-in ones and the named endpoints of
`TURNKEEPER_PROVIDERS`, e.g.

    {"local": {"kind": "openai", "base_url": "http://127.0.0.1:8000/v1",
               "api_key_env": "LOCAL_KEY"}}

makes `local:qwen3-8b` a model string. Keys stay out of the JSON: it names the variable that
holds one (`api_key_env`), or a file (`api_key_file`) or a command (`api_key_command`) whose key
is read again when the endpoint answers 401 (`rotating_key.py`), never the key itself, so the
configuration can be logged and committed. The built-in providers read their SDK's variable, or
`<variable>_FILE` / `<variable>_COMMAND` (`ANTHROPIC_API_KEY_FILE`, ...), the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from turnkeeper.activities.credentials import CredentialError, CredentialSource
from turnkeeper.activities.providers.demo_provider import DemoProvider
from turnkeeper.activities.providers.openai_provider import OpenAICompatibleProvider
from turnkeeper.activities.providers.provider import (
    ModelCallError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    TextSink,
    estimate_input_tokens,
)
from turnkeeper.activities.providers.rotating_key import (
    COMMAND_SUFFIX,
    FILE_SUFFIX,
    KeyedProvider,
    RotatingKeyProvider,
    checked_credential,
    key_source_of_variable,
)
from turnkeeper.contracts.errors import LLM_AUTH_ERROR
from turnkeeper.contracts.names import (
    KNOWN_PROVIDERS,
    PROVIDER_ANTHROPIC,
    PROVIDER_DEMO,
    PROVIDER_NAME_PATTERN,
    PROVIDER_OPENAI,
    PROVIDERS_ENV,
)

# Sent to an endpoint configured without `api_key_env` (a local server that wants no key), so
# that the SDK never falls back to OPENAI_API_KEY and hands OpenAI's key to another server.
NO_KEY = "no-key"


class Endpoint(BaseModel):
    """One named endpoint of `TURNKEEPER_PROVIDERS`."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["openai", "anthropic"]
    base_url: str
    api_key_env: str | None = None
    # A key that rotates: read when the worker starts and again after a 401.
    api_key_file: Path | None = None
    # Out of the repr: a command's arguments may hold a secret of their own.
    api_key_command: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, repr=False
    )
    # Local servers read `max_tokens`; OpenAI's own reasoning models need the newer name.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    # A gateway that reports what each call billed: it prices models the table lacks.
    reports_cost: bool = Field(default=False, strict=True)
    # An `openai`-kind gateway in front of Claude models that forwards cache breakpoints.
    cache_control: bool = Field(default=False, strict=True)

    @model_validator(mode="after")
    def _one_key_source(self) -> Endpoint:
        given = [f for f in ("api_key_env", "api_key_file", "api_key_command") if getattr(self, f)]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(given)} are both set; keep one of them")
        return self

    def key_source(self) -> CredentialSource | None:
        """The file or command the key is read from; None for a variable or no key."""
        if self.api_key_file is not None:
            return CredentialSource(file=self.api_key_file)
        if self.api_key_command is not None:
            return CredentialSource(command=self.api_key_command)
        return None

    @model_validator(mode="after")
    def _cache_control_on_chat_only(self) -> Endpoint:
        if self.cache_control and self.kind == "anthropic":
            raise ValueError(
                "cache_control is for kind 'openai' only: an 'anthropic' endpoint gets cache "
                "breakpoints from agent.prompt_cache already"
            )
        return self


class AnthropicOnFirstCall:
    """The Anthropic provider, with its SDK imported at the first call rather than when the
    worker starts: the `anthropic` package is about 55 MiB of memory and 3,000 modules, which a
    worker that serves only other providers (or the demo) should not hold."""

    def __init__(self, name: str, *, reports_cost: bool = False, **options: str) -> None:
        self.name = name
        self.reports_cost = reports_cost
        self._options = options
        self._provider: ModelProvider | None = None

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        return await self._loaded().complete(request, on_text)

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return await self._loaded().count_input_tokens(request)

    def use_key(self, api_key: str) -> None:
        """Sends `api_key` from the next call on (`AnthropicProvider.use_key`)."""
        self._options["api_key"] = api_key
        if self._provider is not None:
            self._provider.use_key(api_key)  # type: ignore[attr-defined]

    def _loaded(self) -> ModelProvider:
        if self._provider is None:
            from turnkeeper.activities.providers.anthropic_provider import AnthropicProvider

            self._provider = AnthropicProvider(
                self.name, reports_cost=self.reports_cost, **self._options
            )
        return self._provider


class ProvidersConfigError(ValueError):
    """`TURNKEEPER_PROVIDERS` cannot be used; the message names the entry and the field."""


def default_providers(env: Mapping[str, str]) -> dict[str, ModelProvider]:
    """Anthropic, OpenAI (both read their SDK's own variables, or a key file or command named
    by `<variable>_FILE` / `<variable>_COMMAND`), the demo, and each named endpoint of
    `env[TURNKEEPER_PROVIDERS]`.

    Raises:
        ProvidersConfigError: the configuration is wrong, or a key file or command cannot be
            read; the message names the entry or the variable, never a key.
    """
    providers: dict[str, ModelProvider] = {
        PROVIDER_ANTHROPIC: _built_in(
            partial(AnthropicOnFirstCall, PROVIDER_ANTHROPIC), "ANTHROPIC_API_KEY", env
        ),
        PROVIDER_OPENAI: _built_in(
            partial(OpenAICompatibleProvider, PROVIDER_OPENAI), "OPENAI_API_KEY", env
        ),
        PROVIDER_DEMO: DemoProvider(),
    }
    for name, endpoint in named_endpoints(env.get(PROVIDERS_ENV, "")).items():
        providers[name] = endpoint_provider(name, endpoint, env)
    return providers


def _built_in(
    build: Callable[..., KeyedProvider], variable: str, env: Mapping[str, str]
) -> ModelProvider:
    """The provider reading `variable` itself, or with its key from `<variable>_FILE` /
    `<variable>_COMMAND`."""
    try:
        source = key_source_of_variable(variable, env)
    except CredentialError as err:
        raise ProvidersConfigError(str(err)) from None
    if source is None:
        return build()
    where = variable + (FILE_SUFFIX if source.file is not None else COMMAND_SUFFIX)
    return _rotating(build(key_hint=where), source, where)


def _rotating(provider: KeyedProvider, source: CredentialSource, where: str) -> ModelProvider:
    try:
        return RotatingKeyProvider(provider, checked_credential(source, where))
    except CredentialError as err:
        raise ProvidersConfigError(str(err)) from None


def named_endpoints(raw: str) -> dict[str, Endpoint]:
    if not raw.strip():
        return {}
    try:
        entries = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ProvidersConfigError(f"{PROVIDERS_ENV} is not JSON ({err.msg})") from None
    if not isinstance(entries, dict):
        raise ProvidersConfigError(f"{PROVIDERS_ENV} must be a JSON object of named endpoints")
    endpoints = {}
    for name, entry in entries.items():
        if name in KNOWN_PROVIDERS or not re.match(PROVIDER_NAME_PATTERN, name):
            raise ProvidersConfigError(
                f"{PROVIDERS_ENV}: {name!r} cannot name an endpoint (lower-case letters, digits, "
                f"'-' and '_', not one of {', '.join(sorted(KNOWN_PROVIDERS))})"
            )
        try:
            endpoints[name] = Endpoint.model_validate(entry)
        except ValidationError as err:
            problem = "; ".join(
                f"{'.'.join([PROVIDERS_ENV, name, *map(str, e['loc'])])}: {e['msg']}"
                for e in err.errors()
            )
            raise ProvidersConfigError(problem) from None
    return endpoints


class MissingKey:
    """A named endpoint whose key variable is unset: each call fails with LLMAuthError naming
    the variable. Never the SDK's own default variable, which holds another server's key."""

    def __init__(self, name: str, variable: str) -> None:
        self.name = name
        self._variable = variable

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        raise ModelCallError(
            f"No API key for provider {self.name!r}: {self._variable} is not set on the worker.",
            error_type=LLM_AUTH_ERROR,
            retryable=False,
        )

    async def count_input_tokens(self, request: ModelRequest) -> int:
        return estimate_input_tokens(request)


def endpoint_provider(name: str, endpoint: Endpoint, env: Mapping[str, str]) -> ModelProvider:
    if endpoint.api_key_env and not env.get(endpoint.api_key_env):
        return MissingKey(name, endpoint.api_key_env)
    source = endpoint.key_source()
    if source is None:
        return _endpoint_client(name, endpoint, env)
    field = "api_key_file" if source.file is not None else "api_key_command"
    where = f"{PROVIDERS_ENV}.{name}.{field}"
    return _rotating(_endpoint_client(name, endpoint, env, key_hint=where), source, where)


def _endpoint_client(
    name: str, endpoint: Endpoint, env: Mapping[str, str], key_hint: str | None = None
) -> KeyedProvider:
    # A key from a file or a command is set by `RotatingKeyProvider` before the first call.
    key = env[endpoint.api_key_env] if endpoint.api_key_env else NO_KEY
    key_hint = key_hint or endpoint.api_key_env or f"{PROVIDERS_ENV}.{name}.api_key_env"
    if endpoint.kind == "anthropic":
        return AnthropicOnFirstCall(
            name,
            api_key=key,
            base_url=endpoint.base_url,
            key_hint=key_hint,
            reports_cost=endpoint.reports_cost,
        )
    return OpenAICompatibleProvider(
        name,
        api_key=key,
        base_url=endpoint.base_url,
        key_hint=key_hint,
        max_tokens_field=endpoint.max_tokens_field,
        reports_cost=endpoint.reports_cost,
        cache_control=endpoint.cache_control,
    )
