"""`turnkeeper policy check FILE…` (each file's syntax and our entities' schema, with lines) and
`turnkeeper policy test FILE… (--workflow-id ID… | --query Q)`: what the files would have done
to the tool calls of finished turns; exit 1 when any call's effect would change, for CI."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from turnkeeper.activities.policies.entity_schema import problems
from turnkeeper.activities.policies.policy_set import CedarPolicies, PolicyFileError, PolicySource
from turnkeeper.client.connection import connect
from turnkeeper.console.commands import Connection
from turnkeeper.console.policy_calls import PastCall, past_turns
from turnkeeper.console.terminal import CommandError, out
from turnkeeper.contracts.policies import PolicyEffect

# What a call's effect means for the call, as the lines print it.
_DID = {"permit": "ran", "ask": "asked", "forbid": "forbidden"}


def check(files: list[Path]) -> int:
    """Prints each problem as `FILE:LINE: message`, or `FILE: ok`; 1 if any file has one."""
    failed = 0
    for path in files:
        try:
            source = PolicySource(path, path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as err:
            found = [f"{path}: cannot be read: {getattr(err, 'strerror', None) or err}"]
        else:
            found = problems(source)
        for line in found:
            out.print(Text(line, style="red"), soft_wrap=True)
        if not found:
            out.print(Text(f"{path}: ok"), soft_wrap=True)
        failed += bool(found)
    return 1 if failed else 0


async def test(
    connection: Connection,
    files: list[Path],
    workflow_ids: list[str],
    query: str | None,
    limit: int | None,
) -> int:
    """Prints, per turn, each call whose effect would change and the deciding policies, then a
    summary; 1 if any would change (or no turn could be read)."""
    if bool(workflow_ids) == (query is not None):
        raise CommandError("give --workflow-id (repeatable) or --query, not both", exit_code=2)
    try:
        policies = CedarPolicies.read(files)
    except PolicyFileError as err:
        raise CommandError(str(err), exit_code=2) from None
    client = await connect(address=connection.address, namespace=connection.namespace)
    turns = checked = changed = skipped = 0
    async for turn in past_turns(client, workflow_ids, query, limit):
        if turn.problem is not None:
            skipped += 1
            out.print(Text(f"skipped  {turn.workflow_id}: {turn.problem}"), soft_wrap=True)
            continue
        turns += 1
        lines = [line for call in turn.calls if (line := change_line(policies, call))]
        checked += len(turn.calls)
        changed += len(lines)
        verdict = f"{len(lines)} of {len(turn.calls)} calls would change" if lines else "same"
        out.print(Text(f"{turn.workflow_id}: {verdict}"), soft_wrap=True)
        for line in lines:
            out.print(Text(f"  {line}", style="yellow"), soft_wrap=True)
    if turns == 0 and skipped == 0:
        raise CommandError("no workflow matched" + (f" the query {query!r}" if query else ""))
    summary = f"{turns} turns, {checked} tool calls checked, {changed} would change"
    out.print(summary + (f", {skipped} skipped" if skipped else ""), soft_wrap=True)
    return 1 if changed or turns == 0 else 0


def change_line(policies: CedarPolicies, call: PastCall) -> str | None:
    """`call_id tool: ran → forbidden (by …)` when the files would change what happened."""
    decided, _ = policies.decide(call.request)
    would: PolicyEffect = decided.effect
    if would == "permit" and call.asked_anyway:
        would = "ask"  # require_approval still asks where a policy permits
    if would == call.happened:
        return None
    by = ", ".join(decided.policies) or "no policy permits it"
    tool = call.request.tool
    return f"{call.call_id} {tool}: {_DID[call.happened]} → {_DID[would]} (by {by})"
