"""One AG-UI run timed as a front end meets it (docs/ag-ui.md): for the benchmark of the time from
a user message to its first streamed token over each chat protocol, against the turn's own event
stream. `first_token` posts the message to `POST /v1/agents/{agent_id}/ag-ui` and reads the
stream to its end."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import httpx2 as httpx


@dataclass(frozen=True)
class TimedRun:
    """A run's figures: seconds from the request to its first text delta (None: no text) and
    to its `RUN_FINISHED`, and the turn it followed (its workflow id, for the turn's own
    stream)."""

    first_token_s: float | None
    finished_s: float
    workflow_id: str


async def first_token(
    http: httpx.AsyncClient, agent_id: str, thread_id: str, text: str
) -> TimedRun:
    """Sends `text` as the next user message of `thread_id` (`http` carries the base URL and
    the bearer token) and times the run.

    Raises:
        httpx.HTTPStatusError: The run was refused.
        ValueError: The stream ended without `RUN_FINISHED` (it failed, or was cut).
    """
    body = {
        "threadId": thread_id,
        "runId": uuid.uuid4().hex,
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
    }
    started = time.perf_counter()
    first: float | None = None
    workflow_id = ""
    async with http.stream("POST", f"/v1/agents/{agent_id}/ag-ui", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line.removeprefix("data: "))
            if event["type"] == "RUN_STARTED":
                workflow_id = event["metadata"]["turnkeeper"]["workflow_id"]
            elif event["type"] == "TEXT_MESSAGE_CONTENT" and first is None:
                first = time.perf_counter() - started
            elif event["type"] == "RUN_FINISHED":
                return TimedRun(first, time.perf_counter() - started, workflow_id)
    raise ValueError(f"the run of {workflow_id or thread_id!r} ended without RUN_FINISHED")
