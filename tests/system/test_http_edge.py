"""The edge of `turnkeeper serve` as an attacker meets it, against real `turnkeeper serve`
processes beside `python worker.py`: failed sign-ins limited by the connection's address whatever
`X-Forwarded-For` says (unless a proxy is named), a valid token never limited, a 40 MB start
request refused before it is read, half-sent requests cut off, and the inbox under its
Content-Security-Policy showing a bidirectional control as a visible mark. Meanwhile alice's turn
goes on and finishes untouched."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import pytest

from tests.support.browser import find_chromium, headless_chromium
from tests.support.waiting import until
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import agent, task
from tests.system.serving import serving
from tests.system.test_http_api import ARTIFACTS, add_token, scripted_write

TIMEOUT_S = 2
MiB = 1024 * 1024


class Served:
    """A worker, a `turnkeeper serve` for it, and alice's token."""

    def __init__(self, worker: WorkerProcess, url: str, token: str) -> None:
        self.worker, self.url, self.token = worker, url, token
        self.alice = {"Authorization": f"Bearer {token}"}
        self.port = int(url.rsplit(":", 1)[1])

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30)


@pytest.fixture
async def served(stack: SystemStack) -> AsyncIterator[Served]:
    """`turnkeeper serve --request-timeout 2`, with `FORWARDED_ALLOW_IPS=*` in its environment
    (uvicorn's own variable: it must not make the server believe anyone's proxy headers)."""
    worker = await stack.start_worker()
    token = await add_token(stack, worker, "alice")
    options = ("--request-timeout", str(TIMEOUT_S))
    async with serving(stack, worker, *options, env={"FORWARDED_ALLOW_IPS": "*"}) as url:
        yield Served(worker, url, token)


async def alice_waits_for_approval(stack: SystemStack, served: Served) -> tuple[str, str]:
    """Alice's turn (a write that waits for her): its workflow id and the waiting call's id."""
    key = scripted_write(stack, "victim.md", "untouched")
    body = {"agent": agent(key, approvers=["alice"]), "task": task(key), "id": f"victim-{key}"}
    async with served.http() as http:
        started = await http.post("/v1/turns", json=body, headers=served.alice)
        assert started.status_code == 201, started.text
        workflow_id = started.json()["workflow_id"]

        async def waiting() -> list[dict[str, Any]]:
            approvals = (await http.get("/v1/approvals", headers=served.alice)).json()
            return [a for a in approvals if a["workflow_id"] == workflow_id]

        [approval] = await until(waiting, bool, "alice's write to wait")
    return workflow_id, approval["call_id"]


async def alice_approves_and_it_finishes(served: Served, turn: tuple[str, str]) -> None:
    """Alice approves her write: her turn completes and writes what it was going to."""
    workflow_id, call_id = turn
    async with served.http() as http:
        decided = await http.post(
            f"/v1/turns/{workflow_id}/decisions",
            json={"call_id": call_id, "approved": True},
            headers=served.alice,
        )
        assert decided.status_code == 200, decided.text

        async def state() -> str:
            status = await http.get(f"/v1/turns/{workflow_id}", headers=served.alice)
            return str(status.json()["state"])

        await until(state, lambda s: s == "completed", "alice's turn to complete")
    assert (served.worker.workspace / "victim.md").read_text() == "untouched"


async def raw_exchange(port: int, *parts: bytes, within_s: float = 30) -> tuple[bytes, float]:
    """Sends `parts` on one connection while reading what comes back, until the server closes
    it: what it answered, and how many seconds after connecting. The reading goes on beside the
    sending, so an answer sent early is kept even if the server then resets the connection under
    a client still sending."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    received: list[bytes] = []

    async def read() -> None:
        with contextlib.suppress(ConnectionError):
            while block := await reader.read(65536):
                received.append(block)

    reading = asyncio.create_task(read())
    try:
        with contextlib.suppress(ConnectionError):
            for part in parts:
                writer.write(part)
                await writer.drain()
        await asyncio.wait_for(reading, timeout=within_s)
    finally:
        reading.cancel()
        writer.close()
    return b"".join(received), time.monotonic() - started


def alice_starts(served: Served, framing: bytes) -> bytes:
    """The head of a `POST /v1/turns` with alice's token and the body's `framing` header."""
    auth = served.alice["Authorization"].encode()
    return (
        b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: " + auth + b"\r\n" + framing + b"\r\n\r\n"
    )


async def test_failed_sign_ins_count_by_the_connection_whatever_x_forwarded_for_says(
    stack: SystemStack, served: Served
) -> None:
    async with served.http() as http:
        for i in range(10):
            # A client on loopback picks a new "address" for each guess.
            spoofed = {"Authorization": "Bearer tk_guess", "X-Forwarded-For": f"1.2.3.{i}"}
            assert (await http.get("/v1/whoami", headers=spoofed)).status_code == 401
        limited = await http.get(
            "/v1/whoami", headers={"Authorization": "Bearer tk_guess", "X-Forwarded-For": "9.9.9.9"}
        )
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
        # A valid token is never limited, from the same address and whatever it claims.
        for claimed in ({}, {"X-Forwarded-For": "1.2.3.4"}):
            mine = await http.get("/v1/whoami", headers={**served.alice, **claimed})
            assert mine.status_code == 200 and mine.json()["name"] == "alice"
        assert (await http.get("/v1/whoami")).status_code == 429  # no token: still limited
    log = (stack.tmp_path / "serve.log").read_text()
    assert "127.0.0.1:" in log and "1.2.3." not in log and "9.9.9.9" not in log


async def test_proxy_headers_are_believed_only_from_the_named_proxies(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    token = await add_token(stack, worker, "alice")
    options = ("--forwarded-allow-ips", "127.0.0.1")
    async with serving(stack, worker, *options) as url, httpx.AsyncClient(base_url=url) as http:
        for i in range(10):
            # What a proxy sends: the client's own claim, then the address it saw (1.2.3.4).
            forwarded = {
                "Authorization": "Bearer tk_guess",
                "X-Forwarded-For": f"6.6.6.{i}, 1.2.3.4",
            }
            assert (await http.get("/v1/whoami", headers=forwarded)).status_code == 401
        again = await http.get("/v1/whoami", headers=forwarded)
        assert again.status_code == 429  # the rotating claim did not escape the limit
        other = {"Authorization": "Bearer tk_guess", "X-Forwarded-For": "5.6.7.8"}
        assert (await http.get("/v1/whoami", headers=other)).status_code == 401
        valid = {"Authorization": f"Bearer {token}", "X-Forwarded-For": "1.2.3.4"}
        assert (await http.get("/v1/whoami", headers=valid)).status_code == 200
    assert "1.2.3.4:" in (stack.tmp_path / "serve.log").read_text()


async def test_a_40_mb_start_request_is_refused_before_it_is_read(
    stack: SystemStack, served: Served
) -> None:
    victim = await alice_waits_for_approval(stack, served)
    prefix = b'{"id": "big-one", "agent": {"id": "a", "model": "m"}, "task": {"id": "t", "input": "'
    # Declared: refused on the head alone, before a byte of body is sent.
    declared, _ = await raw_exchange(served.port, alice_starts(served, b"Content-Length: 40000000"))
    assert declared.startswith(b"HTTP/1.1 413"), declared[:200]
    assert b"over the limit of 1048576 bytes" in declared
    # Chunked (no length declared): refused once 1 MiB has come in; 40 MB offered.
    chunk = b"x" * (64 * 1024)
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    body = [b"%x\r\n%s\r\n" % (len(prefix), prefix)] + [framed] * 600
    chunked = alice_starts(served, b"Transfer-Encoding: chunked")
    streamed, _ = await raw_exchange(served.port, chunked, *body)
    assert streamed.startswith(b"HTTP/1.1 413"), streamed[:200]
    # A client library that sends its 40 MB before reading gets the 413 too: the rest of the
    # body is dropped as it comes, not answered with a reset.
    async with served.http() as http:
        whole = await http.post("/v1/turns", content=b" " * (40 * MiB), headers=served.alice)
        assert whole.status_code == 413
        assert (await http.get("/v1/turns/big-one", headers=served.alice)).status_code == 404
    await alice_approves_and_it_finishes(served, victim)


async def test_half_sent_requests_are_cut_off_and_the_server_keeps_answering(
    stack: SystemStack, served: Served
) -> None:
    victim = await alice_waits_for_approval(stack, served)
    start = alice_starts(served, b"Content-Length: 5000") + b'{"id": "half-'

    slow = {
        "silent": (),
        "half a head": (b"GET /v1/approvals HTTP/1.1\r\nHost: x\r\nAuthor",),
        "half a start request": (start,),
    }
    # Over fifty such connections at once (Slowloris) while alice works.
    attacks = [raw_exchange(served.port, *parts) for parts in slow.values() for _ in range(17)]
    gathered = asyncio.gather(*attacks)
    async with served.http() as http:
        answered = await http.get("/v1/approvals", headers=served.alice)
        assert answered.status_code == 200
    for answer, after_s in await gathered:
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:200]
        assert b"connection: close" in answer
        assert TIMEOUT_S <= after_s < TIMEOUT_S + 3
    async with served.http() as http:
        assert (await http.get("/v1/turns/half-", headers=served.alice)).status_code == 404
    await alice_approves_and_it_finishes(served, victim)


CHROMIUM = find_chromium()
RLO = "\u202e"


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: chromium)")
async def test_the_inbox_works_under_its_policy_and_shows_bidi_controls(
    stack: SystemStack, served: Served
) -> None:
    # "invoice<RLO>fdp.exe" would read "invoiceexe.pdf" if the control were left to act.
    key = scripted_write(stack, f"invoice{RLO}fdp.exe", "pay 0001")
    assert CHROMIUM is not None
    async with headless_chromium(CHROMIUM) as page:
        await page.goto(served.url + "/")
        await page.fill("#token", served.token)
        await page.click("#signin button")
        await page.wait_for_text("signed in as alice")
        spec = agent(key, approvers=["alice"], id=f"helper{RLO}tnega")
        body = {"agent": spec, "task": task(key), "id": f"bidi-{key}"}
        async with served.http() as http:
            started = await http.post("/v1/turns", json=body, headers=served.alice)
            assert started.status_code == 201, started.text
        text = await page.wait_for_text("write_file")
        assert "agent helper<U+202E>tnega" in text and RLO not in text
        shown = await page.value("textarea")
        assert RLO not in shown
        assert '"path": "invoice\\u202efdp.exe"' in shown
        await page.click("details.edit summary")
        await page.fill("textarea", shown.replace("0001", "0002"))
        diff = await page.wait_for_text('+   "content": "pay 0002"')
        assert RLO not in diff
        await page.screenshot(ARTIFACTS / "inbox-bidi.png")
        await page.click("button.reject")
        await page.wait_for_text("Rejected write_file")
        refused = [line for line in page.console if "Content Security Policy" in line]
        assert refused == []
    assert not (served.worker.workspace / f"invoice{RLO}fdp.exe").exists()
