"""Bad input to the AG-UI endpoint (docs/ag-ui.md, Errors), posted to a real `turnkeeper serve
--agents DIR`: each is answered with an HTTP error naming the field or the reason before any
event is sent, and none starts a turn or decides a call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import new_key
from tests.system.ag_ui_serving import of_type, post_run, run_body
from tests.system.conftest import SystemStack
from tests.system.mcp_serving import Served, approval_agent, http_client, serving_agents
from tests.system.test_mcp_serve_errors import turns_of

BAD_BODIES: list[tuple[dict[str, Any], str]] = [
    ({"runId": "r", "messages": []}, "threadId"),
    ({"threadId": "t", "runId": "r", "messages": "Hi"}, "messages"),
    ({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "robot"}]}, "messages"),
]


async def waiting_run(served: Served, name: str, thread: str) -> dict[str, Any]:
    """A run of `writer` on `thread` as `name` that ends on its approval: the interrupt."""
    response, events = await post_run(served, name, "writer", run_body(thread, text="Write."))
    assert response.status_code == 200, response.text
    [finished] = of_type(events, "RUN_FINISHED")
    [asked] = finished["outcome"]["interrupts"]
    return dict(asked)


async def pending(served: Served, name: str) -> list[dict[str, Any]]:
    """The calls `name` may decide that wait (`GET /v1/approvals`)."""
    async with http_client(served.tokens[name]) as http:
        return list((await http.get(served.url + "/v1/approvals")).json())


async def test_a_body_that_is_no_run_input_is_422_naming_the_field_and_starts_nothing(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    alice = f"alice-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        answers = [await post_run(served, alice, "writer", body) for body, _ in BAD_BODIES]
        assistant_last = run_body(f"t-{key}")
        assistant_last["messages"] = [{"id": "a", "role": "assistant", "content": "Hi"}]
        not_users = await post_run(served, alice, "writer", assistant_last)
        unknown = await post_run(served, alice, "nobody", run_body(f"t-{key}", text="Go."))
        started = await turns_of(served, alice)

    for (response, events), (_, field) in zip(answers, BAD_BODIES, strict=True):
        assert response.status_code == 422 and events == []
        assert field in str(response.json()["detail"])
    response, events = not_users
    assert response.status_code == 422 and events == []
    assert "messages[0]" in response.json()["detail"]
    assert "'assistant'" in response.json()["detail"]
    response, events = unknown
    assert response.status_code == 404 and events == []
    assert started == []


async def test_someone_elses_thread_is_missing_to_them_and_nothing_is_started_or_decided(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    alice, bob = f"alice-{key}", f"bob-{key}"
    thread = f"thread-{key}"
    async with serving_agents(stack, folder, (alice,), (bob,)) as served:
        asked = await waiting_run(served, alice, thread)
        approve = [
            {"interruptId": asked["id"], "status": "resolved", "payload": {"approved": True}}
        ]
        new_message = await post_run(served, bob, "writer", run_body(thread, text="Mine now."))
        bobs_resume = await post_run(served, bob, "writer", run_body(thread, resume=approve))
        nowhere = await post_run(served, bob, "writer", run_body(f"none-{key}", resume=approve))
        still = await pending(served, alice)
        bobs_turns = await turns_of(served, bob)

    for response, events in (new_message, bobs_resume, nowhere):
        assert response.status_code == 404 and events == [], response.text
    # Bob's answer on alice's thread reads as an answer on a thread that does not exist.
    assert bobs_resume[0].json()["detail"].replace(thread, "T") == nowhere[0].json()[
        "detail"
    ].replace(f"none-{key}", "T")
    assert [call["call_id"] for call in still] == [asked["id"]]
    assert bobs_turns == []


async def test_an_answer_that_does_not_fit_decides_nothing(
    stack: SystemStack, tmp_path: Path
) -> None:
    key = new_key()
    folder = tmp_path / "agents"
    approval_agent(stack, folder, key, "writer")
    alice = f"alice-{key}"
    thread = f"thread-{key}"
    async with serving_agents(stack, folder, (alice,)) as served:
        asked = await waiting_run(served, alice, thread)
        call_id = asked["id"]
        answers = {
            "not waiting": [{"interruptId": "call-nope", "status": "resolved", "payload": {}}],
            "malformed": [{"interruptId": call_id, "status": "resolved", "payload": {"ok": 1}}],
            "twice": [
                {"interruptId": call_id, "status": "cancelled"},
                {"interruptId": call_id, "status": "cancelled"},
            ],
            "new message while waiting": None,
        }
        refusals = {}
        for what, resume in answers.items():
            body = run_body(thread, resume=resume) if resume else run_body(thread, text="Again.")
            refusals[what] = await post_run(served, alice, "writer", body)
        still = await pending(served, alice)
        started = await turns_of(served, alice)

    statuses = {what: response.status_code for what, (response, _) in refusals.items()}
    assert statuses == {
        "not waiting": 404,
        "malformed": 422,
        "twice": 422,
        "new message while waiting": 409,
    }
    assert all(events == [] for _, events in refusals.values())
    assert "resume[0].interruptId" in refusals["not waiting"][0].json()["detail"]
    assert "resume[0].payload" in refusals["malformed"][0].json()["detail"]
    assert [call["call_id"] for call in still] == [call_id]
    assert len(started) == 1
