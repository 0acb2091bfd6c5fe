"""What the system tests of providers, MCP, encryption and the worker process share: a turn
started through the public Python client as a user's own program would, reading the variables
the README says a client reads, and the history as `temporal workflow show` prints it."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from temporalio.client import Client

import turnkeeper
from tests.system.conftest import SystemStack, WorkerProcess

SONNET = "anthropic:claude-sonnet-4-6"
GPT = "openai:gpt-4.1"
# What a client process reads (README, Configuration): where the server and the queue are, the
# content store that large reports live in, and the keys that open encrypted payloads.
_CLIENT_VARIABLES = (
    "TEMPORAL_ADDRESS",
    "AGENT_TASK_QUEUE",
    "TURNKEEPER_DATA_DIR",
    "TURNKEEPER_ENCRYPTION_KEYS",
)


async def connect_like(worker: WorkerProcess, monkeypatch: pytest.MonkeyPatch) -> Client:
    """`turnkeeper.connect()` in a process whose environment matches the worker's, as the
    README asks of every client of a namespace (same store, same keys)."""
    return await connect_with(worker.environment, monkeypatch)


async def connect_with(environment: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> Client:
    """`turnkeeper.connect()` in a process whose client variables are those of `environment`."""
    for name in _CLIENT_VARIABLES:
        if name in environment:
            monkeypatch.setenv(name, environment[name])
        else:
            monkeypatch.delenv(name, raising=False)
    return await turnkeeper.connect()


def agent(key: str, model: str = SONNET, **fields: Any) -> dict[str, Any]:
    """An agent whose requests follow the fakes' script `key`."""
    return {
        "id": "system-agent",
        "model": model,
        "system_prompt": f"You answer briefly. [script:{key}]",
        **fields,
    }


def task(key: str, text: str = "Look at the workspace.") -> dict[str, Any]:
    return {"id": f"task-{key}", "input": text}


async def history(stack: SystemStack, workflow_id: str, *flags: str) -> dict[str, Any]:
    """`temporal workflow show -o json`: the history as the CLI prints it."""
    shown = await stack.temporal("workflow", "show", "--workflow-id", workflow_id, *flags)
    assert isinstance(shown, dict), shown
    return shown


# The marker the SDK records for `workflow.patched`; its details name the patch.
PATCH_MARKER = "core_patch"


def payloads(node: Any) -> Iterator[dict[str, Any]]:
    """Every payload (an object with `metadata.encoding`) anywhere in the CLI's JSON, except
    search attributes and patch markers: the server must read search attributes, and the SDK
    records a `workflow.patched` id (a name of ours, never content) without the codec (README)."""
    if isinstance(node, dict):
        if isinstance(node.get("metadata"), dict) and "encoding" in node["metadata"]:
            yield node
            return
        if node.get("markerName") == PATCH_MARKER:
            return
        for name, value in node.items():
            if name != "searchAttributes":
                yield from payloads(value)
    elif isinstance(node, list):
        for item in node:
            yield from payloads(item)


def metadata(payload: dict[str, Any], name: str = "encoding") -> str:
    """One metadata field of a payload (the CLI's JSON prints their values in base64)."""
    return base64.b64decode(payload["metadata"].get(name, "")).decode()


def readable(shown: dict[str, Any]) -> str:
    """The data of every payload the CLI printed, decoded from base64 as far as it is text."""
    data = (base64.b64decode(payload.get("data", "")) for payload in payloads(shown))
    return "\n".join(chunk.decode(errors="replace") for chunk in data)
