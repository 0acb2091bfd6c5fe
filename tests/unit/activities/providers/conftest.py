"""The fake Chat Completions server (in-process) that the OpenAI provider and the named
endpoints of `TURNKEEPER_PROVIDERS` are called against."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.fake_openai import FakeOpenAI, start_fake_openai


@pytest.fixture
async def openai_server() -> AsyncIterator[FakeOpenAI]:
    async with start_fake_openai() as started:
        yield started
