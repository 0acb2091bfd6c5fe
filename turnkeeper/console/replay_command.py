"""`turnkeeper replay`: replay real histories from the server against this installation's
workflow code, one line per history; exit 1 if any diverges (the gate before a deploy)."""

from __future__ import annotations

from rich.text import Text

from turnkeeper.client.connection import connect
from turnkeeper.console.commands import Connection
from turnkeeper.console.terminal import CommandError, out


async def replay(
    connection: Connection, workflow_ids: list[str], query: str | None, limit: int | None
) -> int:
    """Prints `ok` or `DIVERGES` (with where) per history, then a count; 1 if any diverges or
    cannot be fetched, or if the query matched nothing."""
    if bool(workflow_ids) == (query is not None):
        raise CommandError("give --workflow-id (repeatable) or --query, not both", exit_code=2)
    # The worker's workflows, imported to replay only: every other command would pay for them.
    from turnkeeper.worker.history_replay import replay_from_server

    client = await connect(address=connection.address, namespace=connection.namespace)
    replayed = diverged = 0
    async for outcome in replay_from_server(
        client, workflow_ids=workflow_ids, query=query, limit=limit
    ):
        replayed += 1
        run = f" {outcome.run_id}" if outcome.run_id else ""
        if outcome.replays:
            out.print(Text(f"ok        {outcome.workflow_id}{run}"), soft_wrap=True)
        else:
            diverged += 1
            line = f"DIVERGES  {outcome.workflow_id}{run}: {outcome.problem}"
            out.print(Text(line, style="red"), soft_wrap=True)
    if replayed == 0:
        raise CommandError(f"no workflow matched the query {query!r}")
    out.print(f"{replayed} replayed, {diverged} diverged", soft_wrap=True, highlight=False)
    return 1 if diverged else 0
