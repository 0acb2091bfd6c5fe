"""The edge of `turnkeeper serve` in-process: the body limit (declared and streamed), `nosniff`
on every answer, and the inbox's Content-Security-Policy with nothing inline for it to block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message

from tests.unit.builders import request_json
from tests.unit.http.fake_turns import FakeTurns
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.edge import guard_edge
from turnkeeper.http.inbox import CONTENT_SECURITY_POLICY
from turnkeeper.http.tokens import TokenStore

LIMIT = 4096


class Edge:
    def __init__(self, tmp_path: Path) -> None:
        self.store = TokenStore(tmp_path / "tokens.json")
        self.turns = FakeTurns(approvers=["alice"])
        app = create_app(self.turns, self.store, failures=FailedSignIns(limit=1000))
        self.app = guard_edge(app, max_body_bytes=LIMIT)
        self.http = TestClient(self.app)
        self.alice = {"Authorization": f"Bearer {self.store.add('alice')}"}


@pytest.fixture
def edge(tmp_path: Path) -> Edge:
    return Edge(tmp_path)


def padded_request(size: int) -> bytes:
    """A valid start request of exactly `size` bytes (the task's input padded)."""
    body = request_json()
    body["task"]["input"] = ""
    body["task"]["input"] = "x" * (size - len(json.dumps(body)))
    encoded = json.dumps(body).encode()
    assert len(encoded) == size
    return encoded


def test_a_body_at_the_limit_is_read(edge: Edge) -> None:
    answer = edge.http.post(
        "/v1/turns",
        content=padded_request(LIMIT),
        headers={**edge.alice, "Content-Type": "application/json"},
    )
    assert answer.status_code == 201, answer.text
    assert len(edge.turns.starts) == 1


def test_a_declared_body_over_the_limit_is_413_and_nothing_starts(edge: Edge) -> None:
    answer = edge.http.post(
        "/v1/turns",
        content=padded_request(LIMIT + 1),
        headers={**edge.alice, "Content-Type": "application/json"},
    )
    assert answer.status_code == 413
    assert answer.json() == {"detail": "the request body is over the limit of 4096 bytes"}
    assert edge.turns.starts == []


async def test_a_streamed_body_is_refused_once_it_passes_the_limit(edge: Edge) -> None:
    # Driven over ASGI itself: the test client would read a streamed body whole before the app.
    pulled: list[int] = []

    async def receive() -> Message:  # an endless chunked body, 1 KiB at a time
        pulled.append(1024)
        return {"type": "http.request", "body": b" " * 1024, "more_body": True}

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    token = edge.alice["Authorization"].encode()
    headers = [(b"authorization", token), (b"content-type", b"application/json")]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/turns",
        "raw_path": b"/v1/turns",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8787),
        "scheme": "http",
        "root_path": "",
        "http_version": "1.1",
        "asgi": {"version": "3.0"},
    }
    await edge.app(scope, receive, send)

    [start, body] = sent
    assert start["status"] == 413
    assert b"over the limit of 4096 bytes" in body["body"]
    assert len(pulled) == LIMIT // 1024 + 1  # up to the limit and one chunk past it, no more
    assert edge.turns.starts == []


def test_every_answer_says_nosniff(edge: Edge) -> None:
    answers = [
        edge.http.get("/"),
        edge.http.get("/inbox.js"),
        edge.http.get("/openapi.json"),
        edge.http.get("/v1/approvals"),
        edge.http.get("/v1/approvals", headers=edge.alice),
        edge.http.get("/v1/turns/nope", headers=edge.alice),
        edge.http.post("/v1/turns", content=b"x" * (LIMIT + 1), headers=edge.alice),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 401, 200, 404, 413]
    assert all(a.headers["x-content-type-options"] == "nosniff" for a in answers)


def test_the_inbox_has_its_policy_and_nothing_inline(edge: Edge) -> None:
    page = edge.http.get("/")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert CONTENT_SECURITY_POLICY == "default-src 'self'; frame-ancestors 'none'"  # the contract
    html = page.text
    # Under default-src 'self' an inline script, style or handler would not run: there is none.
    scripts = ['<script src="/inbox-view.js" defer>', '<script src="/inbox.js" defer>']
    assert re.findall(r"<script[^>]*>", html) == scripts
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)
    script, views = edge.http.get("/inbox.js"), edge.http.get("/inbox-view.js")
    for answer in (script, views):
        assert answer.headers["content-type"].startswith("text/javascript")
        assert "style=" not in answer.text  # no inline style made by the scripts either
        # Data is only ever set as text: nothing the page shows is parsed as HTML.
        assert "innerHTML" not in answer.text and "insertAdjacentHTML" not in answer.text
    assert "sessionStorage" in script.text and "\\u202A-\\u202E" in views.text
    assert edge.http.get("/inbox.css").headers["content-type"].startswith("text/css")
