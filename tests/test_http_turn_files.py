"""A turn's files over HTTP (turnkeeper/http/turn_files.py): the app in-process over the dev
server, a worker in the test's process on the client's own content store (as a deployment shares
one). Whoever may see the turn reads its attachment and its sandbox file with their bytes as
stored; to anyone else, and for what the turn does not name, it is a 404 like a missing turn;
a sandbox file of a running turn is a 409; the bytes come as a download a browser will not
render in the API's origin."""

from __future__ import annotations

import base64
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client
from turnkeeper.contracts.names import TASK_QUEUE_ENV

from tests.conftest import TurnRunner, make_settings, new_key, running_worker, scripted_request
from tests.fakes import fake_anthropic as fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.attachment_files import png_of
from turnkeeper.client.client import turn
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns
from turnkeeper.http.tokens import TokenStore
from turnkeeper.http.turns import TurnService
from turnkeeper.payloads.content_store import ContentStore

CHART = png_of(30 * 1024)
SANDBOX = {"tools": ["run_shell"], "sandbox": {"timeout_s": 10, "memory_mb": 256}}


class Api:
    def __init__(self, http: httpx.AsyncClient, tokens: dict[str, str]) -> None:
        self.http = http
        self.tokens = tokens

    async def get(self, url: str, name: str, **params: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[name]}"}
        return await self.http.get(url, headers=headers, params=params)


@pytest.fixture
async def sharing(
    client: Client, fake_anthropic: FakeAnthropic, payload_store: ContentStore, tmp_path: Path
) -> AsyncIterator[TurnRunner]:
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    async with running_worker(client, settings, fake_anthropic, store=payload_store):
        yield TurnRunner(client, settings.task_queue, settings, fake_anthropic)


@pytest.fixture
async def api(
    sharing: TurnRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Api]:
    monkeypatch.setenv(TASK_QUEUE_ENV, sharing.task_queue)  # where the served turns go
    store = TokenStore(tmp_path / "tokens.json")
    # A tenant of this test's own: its ledger workflow runs on this test's worker.
    tenant = f"acme-{new_key()}"
    tokens = {
        "mia": store.add("mia", tenant=tenant),
        "max": store.add("max", tenant=tenant),
        "olga": store.add("olga", role="operator"),
    }
    app = create_app(TurnService(sharing.client), store, failures=FailedSignIns(limit=1000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        yield Api(http, tokens)


async def _started_by_mia(api: Api, sharing: TurnRunner, request: dict[str, object]) -> str:
    answer = await api.http.post(
        "/v1/turns",
        json=request,
        headers={"Authorization": f"Bearer {api.tokens['mia']}"},
    )
    assert answer.status_code == 201, answer.text
    workflow_id: str = answer.json()["workflow_id"]
    return workflow_id


async def test_an_attachment_is_read_by_who_may_see_its_turn_and_missing_to_anyone_else(
    api: Api, sharing: TurnRunner
) -> None:
    key = new_key()
    sharing.fake.script(key, [fake.text("A chart.")])
    block = {
        "type": "image",
        "name": "q3 chart.png",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(CHART).decode(),
        },
    }
    request = scripted_request(key, task={"input": [{"type": "text", "text": "What?"}, block]})
    workflow_id = await _started_by_mia(api, sharing, request)
    report = await turn(sharing.client, workflow_id).result()
    ref = report.messages[0].content[1].source.ref  # type: ignore[union-attr]
    url = f"/v1/turns/{workflow_id}/attachments/{ref}"

    for name, digest in (("mia", ref), ("olga", ref), ("mia", ref.removeprefix("sha256:"))):
        got = await api.get(f"/v1/turns/{workflow_id}/attachments/{digest}", name)
        assert got.status_code == 200, got.text
        assert got.content == CHART and got.headers["content-type"] == "image/png"
        assert got.headers["content-disposition"] == "attachment; filename*=UTF-8''q3%20chart.png"
        assert "sandbox" in got.headers["content-security-policy"]

    # Another member of mia's tenant: the same 404 as a turn that does not exist.
    hidden = await api.get(url, "max")
    nobody = f"turn-{new_key()}"
    missing = await api.get(f"/v1/turns/{nobody}/attachments/{ref}", "max")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == {"detail": f"no turn {workflow_id!r}"}
    assert missing.json() == {"detail": f"no turn {nobody!r}"}
    # A digest the turn does not name is not read, even one of the store.
    other = await api.get(f"/v1/turns/{workflow_id}/attachments/sha256:{'0' * 64}", "mia")
    assert other.status_code == 404 and "has no attachment" in other.json()["detail"]
    unsigned = await api.http.get(url)
    assert unsigned.status_code == 401
    paths = (await api.http.get("/openapi.json")).json()["paths"]
    assert {
        "/v1/turns/{workflow_id}/attachments/{digest}",
        "/v1/turns/{workflow_id}/sandbox",
    } <= set(paths)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
async def test_a_sandbox_file_is_read_once_the_turn_ends_by_who_may_see_it(
    api: Api, sharing: TurnRunner
) -> None:
    key = new_key()
    sharing.fake.script(
        key,
        [
            fake.tool_calls(
                ("run_shell", {"command": "mkdir out && printf 'a,b\\n1,2\\n' > out/t.csv"})
            ),
            fake.text("Written."),
        ],
    )
    workflow_id = await _started_by_mia(api, sharing, scripted_request(key, agent=SANDBOX))
    await turn(sharing.client, workflow_id).result()
    url = f"/v1/turns/{workflow_id}/sandbox"

    got = await api.get(url, "mia", path="out/t.csv")
    assert got.status_code == 200, got.text
    assert got.content == b"a,b\n1,2\n"
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"] == "attachment; filename*=UTF-8''t.csv"
    assert (await api.get(url, "olga", path="out/t.csv")).status_code == 200
    assert (await api.get(url, "max", path="out/t.csv")).status_code == 404

    for path, needle in (
        ("out/none.csv", "has no file 'out/none.csv'"),
        ("../etc/passwd", "has no file"),
    ):
        absent = await api.get(url, "mia", path=path)
        assert absent.status_code == 404 and needle in absent.json()["detail"], absent.text
        assert "out/t.csv" in absent.json()["detail"]  # it says which files there are
    no_path = await api.get(url, "mia")
    assert no_path.status_code == 422


async def test_a_turn_without_a_sandbox_or_still_running_says_so(
    api: Api, sharing: TurnRunner
) -> None:
    key = new_key()
    sharing.fake.script(key, [fake.text("No files.")])
    ended = await _started_by_mia(api, sharing, scripted_request(key))
    await turn(sharing.client, ended).result()
    none = await api.get(f"/v1/turns/{ended}/sandbox", "mia", path="x.txt")
    assert none.status_code == 404 and "has no sandbox folder" in none.json()["detail"]

    waiting_key = new_key()
    sharing.fake.script(
        waiting_key, [fake.tool_calls(("write_file", {"path": "a.txt", "content": "x"}))]
    )
    waiting = scripted_request(
        waiting_key,
        agent={"tools": ["write_file"]},
        task={"constraints": {"require_approval": ["write_file"]}},
    )
    running = await _started_by_mia(api, sharing, waiting)
    busy = await api.get(f"/v1/turns/{running}/sandbox", "mia", path="x.txt")
    assert busy.status_code == 409 and "still running" in busy.json()["detail"]
    await turn(sharing.client, running).cancel()
