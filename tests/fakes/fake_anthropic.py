"""A local fake of the Anthropic Messages API, so tests drive the real `anthropic` SDK over HTTP.

A test registers a script under a key and puts `[script:KEY]` in the agent's system prompt (or,
when it cannot, in the turn's first user message). The
step a request gets is the number of assistant messages it carries: the fake is stateless like a
model reading the conversation, so a retried call gets the same step. A step may be a list of
replies consumed per attempt (the last one repeats), which is how a test scripts "fail twice,
then answer".

Example:
    async with start_fake_anthropic() as fake:
        fake.script("hello", [tool_calls(("read_file", {"path": "a.md"})), text("done")])
        provider = AnthropicProvider(api_key="test", base_url=fake.base_url)
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from itertools import count
from typing import TypeVar

from aiohttp import web

from tests.fakes.anthropic_cache import PromptCache
from tests.fakes.anthropic_replies import (
    ErrorReply,
    JsonDict,
    MessageReply,
    RawReply,
    Reply,
    ReplyContext,
    ReplySpec,
    SlowReply,
    Step,
    broken_body,
    context_window_exceeded,
    error,
    estimate_tokens,
    invalid_json,
    max_tokens_reply,
    overloaded,
    rate_limited,
    refusal,
    request_text_chars,
    resolve,
    sanitise_key,
    server_error,
    slow,
    stream_cut,
    text,
    tool_calls,
)
from tests.fakes.anthropic_validation import check_messages, find_request_problem
from tests.fakes.provider_rate_limit import ProviderRateLimit, retry_after_header

__all__ = [
    "BilledCall",
    "ErrorReply",
    "FakeAnthropic",
    "MessageReply",
    "RawReply",
    "ReceivedRequest",
    "Reply",
    "ReplySpec",
    "SlowReply",
    "Step",
    "broken_body",
    "context_window_exceeded",
    "error",
    "invalid_json",
    "max_tokens_reply",
    "overloaded",
    "rate_limited",
    "refusal",
    "script_marker",
    "server_error",
    "slow",
    "start_fake_anthropic",
    "stream_cut",
    "text",
    "tool_calls",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
_MARKER = re.compile(r"\[script:([^\]\s]+)\]")
_Fake = TypeVar("_Fake", bound="FakeAnthropic")


def script_marker(key: str) -> str:
    """The text to put in a system prompt so that its requests follow script `key`."""
    return f"[script:{key}]"


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the fake saw it. `attempt` is None when the fake refused it with a 400."""

    path: str
    body: JsonDict
    headers: dict[str, str]
    script_key: str | None
    step: int | None
    attempt: int | None
    # Wall-clock arrival (time.time()), so tests can read retry schedules.
    received_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class BilledCall:
    """A Messages API answer the fake sent in full: what a real provider would bill."""

    script_key: str | None
    step: int | None
    input_tokens: int
    output_tokens: int


class _Refused(Exception):
    """The request cannot be served; the message becomes the 400's `error.message`."""


class FakeAnthropic:
    """The fake's state: registered scripts, attempts per step and every request received."""

    messages_path = MESSAGES_PATH

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[ReceivedRequest] = []
        self.billed: list[BilledCall] = []
        self._scripts: dict[str, list[Step]] = {}
        self._count_token_replies: dict[str, Reply] = {}
        self._attempts: Counter[tuple[str, int]] = Counter()
        self._serial = count(1)
        self._arrived = asyncio.Condition()
        self._caching: set[str] = set()
        self.prompt_cache = PromptCache()
        # Set it to answer 429 above N requests per window (`provider_rate_limit.py`).
        self.rate_limit: ProviderRateLimit | None = None
        self._keys: dict[str, str] = {}

    def require_key(self, key: str, api_key: str) -> None:
        """Answers script `key`'s requests with 401 unless they carry `api_key` (a test changes
        it to rotate the key); the 401 echoes the key it was sent, as some servers do."""
        self._keys[key] = api_key

    def sent_key(self, request: ReceivedRequest) -> str:
        """The key `request` carried: `x-api-key`, or a bearer token as the SDK also sends."""
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        return request.headers.get("x-api-key", bearer)

    def _unauthorized(self, sent: str) -> Reply:
        return error(401, "authentication_error", f"invalid x-api-key: {sent}")

    def script(self, key: str, steps: Sequence[Step], *, prompt_cache: bool = False) -> None:
        """Registers (or replaces, with fresh attempt counts) the script for `key`. With
        `prompt_cache`, its answers report cache reads and writes as the API does
        (`anthropic_cache.py`); otherwise both are 0, as for a request without breakpoints."""
        if not _MARKER.fullmatch(script_marker(key)):
            raise ValueError(f"a script key cannot be empty or hold spaces or ']': {key!r}")
        self._scripts[key] = list(steps)
        if prompt_cache:
            self._caching.add(key)
        else:
            self._caching.discard(key)
        for seen in [seen for seen in self._attempts if seen[0] == key]:
            del self._attempts[seen]

    def script_count_tokens(self, key: str, reply: Reply) -> None:
        """Answers script `key`'s `count_tokens` requests with `reply` instead of a count."""
        self._count_token_replies[key] = reply

    def billed_for(self, key: str) -> list[BilledCall]:
        """The answers script `key` was billed for, in order."""
        return [call for call in self.billed if call.script_key == key]

    def requests_for(self, key: str) -> list[ReceivedRequest]:
        """The `POST /v1/messages` requests that named script `key`, in order."""
        return [r for r in self.requests if r.script_key == key and r.path == self.messages_path]

    async def wait_for_requests(
        self, key: str, count: int = 1, timeout_s: float = 10.0
    ) -> list[ReceivedRequest]:
        """Waits until script `key` has received `count` requests; returns them all."""
        async with asyncio.timeout(timeout_s), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests_for(key)) >= count)
        return self.requests_for(key)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(MESSAGES_PATH, self._handle_messages)
        app.router.add_post(COUNT_TOKENS_PATH, self._handle_count_tokens)
        return app

    async def _handle_messages(self, request: web.Request) -> web.Response:
        return await self._serve(request, request_script_key)

    def _invalid_request(self, message: str) -> Reply:
        return _invalid_request(message)

    async def _serve(
        self, request: web.Request, script_key: Callable[[JsonDict], str | None]
    ) -> web.Response:
        """Answers one request of `messages_path` from the script its body names."""
        body = await _json_body(request)
        key = script_key(body) if body is not None else None
        step = count_assistant_messages(body) if body is not None else None
        received = ReceivedRequest(
            self.messages_path, body or {}, _lower_case(request.headers), key, step, None
        )
        context = self._context(body or {}, key, step)
        sent = self.sent_key(received)
        if key in self._keys and sent != self._keys[key]:
            await self._record(received)
            return await self._unauthorized(sent).respond(context)
        wait_s = self.rate_limit.admit() if self.rate_limit is not None else None
        if wait_s is not None:
            await self._record(received)
            return await rate_limited(retry_after_header(wait_s)).respond(context)
        try:
            spec, attempt = self._choose(body, key, step)
        except _Refused as refused:
            await self._record(received)
            return await self._invalid_request(str(refused)).respond(context)
        await self._record(replace(received, attempt=attempt))
        if key in self._caching and body is not None:
            context = replace(context, cache_usage=self.prompt_cache.usage(body))
        try:
            reply = resolve(spec, body or {})
        except Exception as exc:
            # A test's own callable failed: a 400 fails the turn at once, where a 500 would be
            # retried until the test times out.
            problem = f"The dynamic reply of script {key!r} step {step} raised {exc!r}."
            return await self._invalid_request(problem).respond(context)
        response = await reply.respond(context)
        usage = _billed_usage(reply, context)
        if usage is not None:
            # Counted once the answer is ready to go: a client that dies reading it is billed.
            self.billed.append(
                BilledCall(key, step, usage.get("input_tokens", 0), usage.get("output_tokens", 0))
            )
        return response

    async def _handle_count_tokens(self, request: web.Request) -> web.Response:
        body = await _json_body(request) or {}
        key = request_script_key(body)
        received = ReceivedRequest(
            COUNT_TOKENS_PATH, body, _lower_case(request.headers), key, None, None
        )
        await self._record(received)
        problem = check_messages(body.get("messages"))
        if problem:
            return await _invalid_request(problem).respond(self._context(body, key, None))
        if key in self._count_token_replies:
            return await self._count_token_replies[key].respond(self._context(body, key, None))
        return web.json_response({"input_tokens": estimate_tokens(request_text_chars(body))})

    async def _record(self, received: ReceivedRequest) -> None:
        async with self._arrived:
            self.requests.append(received)
            self._arrived.notify_all()

    def _choose(
        self, body: JsonDict | None, key: str | None, step: int | None
    ) -> tuple[ReplySpec, int]:
        if body is None:
            raise _Refused("The request body is not a JSON object.")
        problem = self._request_problem(body)
        if problem:
            raise _Refused(problem)
        if key is None:
            raise _Refused(
                "The fake found no [script:KEY] marker in the system prompt or first user message."
            )
        if key not in self._scripts:
            raise _Refused(
                f"The fake has no script {key!r}; {len(self._scripts)} scripts are registered."
            )
        steps = self._scripts[key]
        assert step is not None  # a valid body has a messages list, so a step
        if step >= len(steps):
            raise _Refused(
                f"Script {key!r} ran out: the request carries {step} assistant messages, so it "
                f"asks for step {step}, but the script has {len(steps)} steps (assistant "
                "messages of a continued history count too)."
            )
        attempt = self._attempts[(key, step)]
        self._attempts[(key, step)] += 1
        return _for_attempt(steps[step], attempt), attempt

    def _request_problem(self, body: JsonDict) -> str | None:
        return find_request_problem(body)

    def _context(self, body: JsonDict, key: str | None, step: int | None) -> ReplyContext:
        serial = next(self._serial)
        return ReplyContext(
            body=body,
            request_id=f"req_fake_{serial:04d}",
            message_id=f"msg_fake_{serial:04d}",
            tool_id_prefix=f"toolu_{sanitise_key(key or 'none')}_{step or 0}",
        )


@asynccontextmanager
async def start_fake_anthropic(host: str = "127.0.0.1") -> AsyncIterator[FakeAnthropic]:
    """Serves a fresh `FakeAnthropic` on a free port of `host` until the block exits."""
    async with serving(FakeAnthropic(), host) as fake:
        yield fake


@asynccontextmanager
async def serving(fake: _Fake, host: str) -> AsyncIterator[_Fake]:
    """Serves `fake` on a free port of `host` until the block exits; sets its `base_url`."""
    # Handler cancellation and a short shutdown let a test end while a slow() reply still sleeps.
    runner = web.AppRunner(
        fake.app(), access_log=None, handler_cancellation=True, shutdown_timeout=1.0
    )
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        fake.base_url = f"http://{host}:{port}"
        yield fake
    finally:
        await runner.cleanup()


def system_text(system: object) -> str | None:
    """A request's system prompt as one string, whether sent as a string or as text blocks
    (prompt caching sends blocks, to mark a breakpoint on them)."""
    if isinstance(system, list):
        return "\n".join(str(block.get("text", "")) for block in system if isinstance(block, dict))
    return system if isinstance(system, str) else None


def find_script_key(system: object) -> str | None:
    """The KEY of the first `[script:KEY]` in a system prompt given as a string or text blocks."""
    match = _MARKER.search(system_text(system) or "")
    return match.group(1) if match else None


def request_script_key(body: JsonDict) -> str | None:
    """The KEY from the system prompt or, failing that, from the first user message: a caller
    that cannot change the agent's system prompt (an example app) puts it in the task input."""
    key = find_script_key(body.get("system"))
    if key is not None:
        return key
    messages = body.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    if not isinstance(first, dict) or first.get("role") != "user":
        return None
    content = first.get("content")
    return find_script_key(content if isinstance(content, list | str) else None)


def count_assistant_messages(body: JsonDict) -> int:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def _billed_usage(reply: Reply, context: ReplyContext) -> dict[str, int] | None:
    while isinstance(reply, SlowReply):
        reply = resolve(reply.reply, context.body)
    return reply.billed_usage(context) if isinstance(reply, MessageReply) else None


def _for_attempt(step: Step, attempt: int) -> ReplySpec:
    if isinstance(step, Sequence):
        if not step:
            raise _Refused("A script step is an empty list of replies.")
        return step[min(attempt, len(step) - 1)]
    return step


def _invalid_request(message: str) -> Reply:
    return error(400, "invalid_request_error", message)


def _lower_case(headers: Mapping[str, str]) -> dict[str, str]:
    # HTTP header names are case-insensitive; tests look them up in lower case.
    return {name.lower(): value for name, value in headers.items()}


async def _json_body(request: web.Request) -> JsonDict | None:
    try:
        body = json.loads(await request.read())
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
