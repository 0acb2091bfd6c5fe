"""`turnkeeper waiting`: every turn parked by the built-in `wait` tool, with what it waits for
and until when (as `turnkeeper pending` lists the turns waiting for a person)."""

from __future__ import annotations

import json

from turnkeeper.client.connection import connect
from turnkeeper.client.turns import TIMED_WAIT_QUERY, WaitingTurn, list_waiting
from turnkeeper.console.commands import Connection
from turnkeeper.console.terminal import out
from turnkeeper.contracts.waits import wait_line


def _json(turn: WaitingTurn) -> dict[str, object]:
    waits = turn.status.waiting_for if turn.status else []
    return {
        "workflow_id": turn.workflow_id,
        "agent_id": turn.agent_id,
        "waiting_for": [wait.model_dump(mode="json") for wait in waits],
    }


async def waiting(connection: Connection, task_queue: str | None, as_json: bool) -> int:
    client = await connect(address=connection.address, namespace=connection.namespace)
    turns = await list_waiting(client, task_queue, TIMED_WAIT_QUERY)
    if as_json:
        out.out(json.dumps([_json(turn) for turn in turns]), highlight=False)
    elif not turns:
        out.print("No turn is waiting on a wait call.")
    for turn in [] if as_json else turns:
        out.print(f"{turn.workflow_id} ({turn.agent_id})", highlight=False, markup=False)
        if turn.status is None:
            out.print("  no worker answered its status query", highlight=False)
        for wait in turn.status.waiting_for if turn.status else []:
            out.print(f"  {wait_line(wait)}", highlight=False, markup=False)
    return 0
