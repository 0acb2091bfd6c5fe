"""The named endpoints of `TURNKEEPER_PROVIDERS`: each reads its own key and settings, and a bad
configuration is refused naming its field. Calls go to the fake APIs (in-process)."""

from __future__ import annotations

import json

import pytest
from turnkeeper.activities.providers.endpoints import (
    NO_KEY,
    ProvidersConfigError,
    default_providers,
    named_endpoints,
)
from turnkeeper.activities.providers.provider import ModelCallError
from turnkeeper.contracts.errors import LLM_AUTH_ERROR
from turnkeeper.contracts.messages import TextBlock

from tests.fakes import fake_anthropic as anthropic_fake
from tests.fakes import openai_replies as fake
from tests.fakes.fake_anthropic import start_fake_anthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.unit.activities.providers.openai_requests import new_key, request_for


async def test_a_named_endpoint_sends_its_own_key_and_max_tokens(
    openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak")
    config = {
        "local": {
            "kind": "openai",
            "base_url": f"{openai_server.base_url}/v1",
            "api_key_env": "LK",
        },
        "open": {"kind": "openai", "base_url": f"{openai_server.base_url}/v1"},
    }
    env = {"TURNKEEPER_PROVIDERS": json.dumps(config), "LK": "local-secret"}
    providers = default_providers(env)
    key = new_key()
    openai_server.script(key, [[fake.text("hi"), fake.text("hi")]])

    await providers["local"].complete(request_for(key))
    await providers["open"].complete(request_for(key))

    first, second = openai_server.requests_for(key)
    assert first.headers["authorization"] == "Bearer local-secret"
    assert second.headers["authorization"] == f"Bearer {NO_KEY}"
    assert first.body["max_tokens"] == 256 and "max_completion_tokens" not in first.body
    assert {"anthropic", "openai", "demo", "local", "open"} <= providers.keys()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_named_endpoint_whose_key_variable_is_unset_fails_as_auth(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDKs' own variables hold other servers' keys: never a fallback for this endpoint.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    config = {"local": {"kind": kind, "base_url": "http://127.0.0.1:9/v1", "api_key_env": "K"}}
    provider = default_providers({"TURNKEEPER_PROVIDERS": json.dumps(config)})["local"]

    with pytest.raises(ModelCallError) as raised:
        await provider.complete(request_for(new_key()))

    assert raised.value.error_type == LLM_AUTH_ERROR and "K is not set" in str(raised.value)
    assert await provider.count_input_tokens(request_for(new_key())) > 0


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("{not json", "is not JSON"),
        ("[]", "JSON object"),
        ('{"openai": {"kind": "openai", "base_url": "http://x"}}', "'openai' cannot name"),
        ('{"Big Name": {"kind": "openai", "base_url": "http://x"}}', "cannot name"),
        ('{"local": {"kind": "ollama", "base_url": "http://x"}}', "local.kind"),
        ('{"local": {"kind": "openai"}}', "local.base_url"),
        ('{"local": {"kind": "openai", "base_url": "http://x", "api_key": "k"}}', "api_key"),
        (
            '{"gw": {"kind": "openai", "base_url": "http://x", "reports_cost": "yes"}}',
            "reports_cost",
        ),
        (
            '{"gw": {"kind": "anthropic", "base_url": "http://x", "cache_control": true}}',
            "cache_control is for kind 'openai' only",
        ),
    ],
)
def test_bad_provider_configuration_is_refused_with_its_field(raw: str, needle: str) -> None:
    with pytest.raises(ProvidersConfigError, match="TURNKEEPER_PROVIDERS") as raised:
        named_endpoints(raw)
    assert needle in str(raised.value)


async def test_a_named_anthropic_endpoint_sends_its_own_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    async with start_fake_anthropic() as server:
        config = {"backup": {"kind": "anthropic", "base_url": server.base_url, "api_key_env": "B"}}
        env = {"TURNKEEPER_PROVIDERS": json.dumps(config), "B": "backup-secret"}
        provider = default_providers(env)["backup"]
        key = new_key()
        server.script(key, [anthropic_fake.text("from the backup")])

        response = await provider.complete(request_for(key))

        assert response.content == [TextBlock(text="from the backup")]
        headers = server.requests_for(key)[0].headers
        assert "backup-secret" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
        assert "sk-ant-must-not-leak" not in str(headers)
