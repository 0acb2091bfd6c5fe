"""The fake's prompt cache reports usage as the API documents it, and refuses a fifth
breakpoint as the API does."""

from __future__ import annotations

import anthropic
import pytest

from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import start_fake_anthropic

CACHED = {"type": "ephemeral"}
LONG = "x" * 8000  # 2,000 tokens by the fake's count: over the minimum cacheable prefix


def block(text: str, cached: bool = False) -> dict:
    return {"type": "text", "text": text} | ({"cache_control": CACHED} if cached else {})


async def test_reads_writes_and_uncached_input_add_up() -> None:
    async with start_fake_anthropic() as server:
        server.script("c", [fake.text("one"), fake.text("two")], prompt_cache=True)
        client = anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, max_retries=0)
        system = [block(f"[script:c] {LONG}", cached=True)]
        first = [{"role": "user", "content": [block("question one " * 10, cached=True)]}]
        one = await client.messages.create(model="m", max_tokens=10, system=system, messages=first)
        second = [
            *first,
            {"role": "assistant", "content": "one"},
            {"role": "user", "content": [block("question two", cached=True)]},
        ]
        two = await client.messages.create(model="m", max_tokens=10, system=system, messages=second)
        await client.close()

    assert one.usage.cache_read_input_tokens == 0
    assert one.usage.cache_creation_input_tokens > 2000
    # The second call reads what the first wrote and writes only its own new part.
    assert two.usage.cache_read_input_tokens == one.usage.cache_creation_input_tokens
    assert 0 < two.usage.cache_creation_input_tokens < 20
    assert two.usage.input_tokens == 0  # nothing after the last breakpoint


async def test_a_fifth_breakpoint_is_refused() -> None:
    async with start_fake_anthropic() as server:
        server.script("c", [fake.text("never")])
        client = anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, max_retries=0)
        content = [block(f"part {i}", cached=True) for i in range(4)]
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks"):
            await client.messages.create(
                model="m",
                max_tokens=10,
                system=[block("[script:c]", cached=True)],
                messages=[{"role": "user", "content": content}],
            )
        await client.close()
