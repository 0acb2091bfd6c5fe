"""turnkeeper inside an application's own Temporal worker, as the guide's "Adding turnkeeper to
your own worker" writes it: a script with its own workflow and activity builds its `Client` and
`Worker` itself and adds `turnkeeper.TurnkeeperPlugin(tools=[…])`, run as its own process. The
same worker then runs an agent turn whose tool needs approval (approved through the public
client) and the application's own workflow, which must work as it did without turnkeeper."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as fake
from tests.system.conftest import SystemStack
from tests.system.driving import agent, task
from tests.system.steps import connect_as_user, model_saw, tool_results

# The application's worker; CONNECT is where the two documented ways differ.
APPLICATION = '''
import asyncio
import json
import os
import signal
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

import turnkeeper


@dataclass
class Invoice:
    number: str
    total_usd: float


@activity.defn
async def send_invoice(invoice: Invoice) -> str:
    with Path("invoices.jsonl").open("a") as sent:
        sent.write(json.dumps({"number": invoice.number, "total_usd": invoice.total_usd}) + "\\n")
    return f"sent {invoice.number}"


@workflow.defn
class InvoiceWorkflow:
    @workflow.run
    async def run(self, invoice: Invoice) -> str:
        return await workflow.execute_activity(
            send_invoice, invoice, start_to_close_timeout=timedelta(seconds=30)
        )


@turnkeeper.tool(requires_approval=True, idempotent=False)
def refund(order_id: str, amount_usd: float) -> str:
    """Refund part or all of an order."""
    with Path("refunds.jsonl").open("a") as ledger:
        ledger.write(json.dumps({"order_id": order_id, "amount_usd": amount_usd}) + "\\n")
    return f"refunded ${amount_usd:.2f} on order {order_id}"


async def main() -> None:
    plugin = turnkeeper.TurnkeeperPlugin(tools=[refund], builtin_tools=False)
CONNECT
    worker = Worker(
        client,
        task_queue=os.environ["AGENT_TASK_QUEUE"],
        workflows=[InvoiceWorkflow],
        activities=[send_invoice],
        plugins=worker_plugins,
    )
    asyncio.get_running_loop().add_signal_handler(
        signal.SIGTERM, lambda: asyncio.ensure_future(worker.shutdown())
    )
    await worker.run()


if __name__ == "__main__":  # the sandbox imports this module again to run InvoiceWorkflow
    asyncio.run(main())
'''

CONNECTIONS = {
    # The plugin on the client: the client speaks turnkeeper's converter, and every worker of
    # that client runs turnkeeper.
    "client": (
        '    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], plugins=[plugin])\n'
        "    worker_plugins = []\n"
    ),
    # A client from `turnkeeper.connect()`, the plugin on the worker only.
    "worker": "    client = await turnkeeper.connect()\n    worker_plugins = [plugin]\n",
}


@pytest.mark.parametrize("given_to", sorted(CONNECTIONS))
async def test_an_application_worker_runs_turns_beside_its_own_workflow(
    stack: SystemStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given_to: str
) -> None:
    script = tmp_path / "invoice_app.py"
    script.write_text(APPLICATION.replace("CONNECT\n", CONNECTIONS[given_to]))
    # The script logs nothing of its own: the turn below waits on the queue until it polls.
    worker = await stack.start_worker(script=[sys.executable, str(script)], wait=False)
    key = new_key()
    stack.fake.script(
        key,
        [
            fake.tool_calls(("refund", {"order_id": "1042", "amount_usd": 25})),
            fake.text("Refunded $25 on order 1042."),
        ],
    )

    client = await connect_as_user(worker, monkeypatch)
    handle = await turnkeeper.start_turn(
        client,
        agent=agent(key, tools=["refund"]),
        task=task(key, "Refund $25 on order 1042"),
        task_queue=worker.task_queue,
    )
    async for event in handle.events():
        if event.kind == "approval_requested":
            await handle.approve(event.call_id, approver="alice")
    report = await handle.result()
    sent = await client.execute_workflow(
        "InvoiceWorkflow",
        {"number": "INV-7", "total_usd": 12.5},
        id=f"invoice-{uuid.uuid4()}",
        task_queue=worker.task_queue,
        result_type=str,
    )

    assert (report.outcome, report.tool_calls) == ("completed", 1)
    assert [decision.approver for decision in report.decisions] == ["alice"]
    [refunded] = tool_results(model_saw(stack, key)[-1])
    assert "refunded $25.00 on order 1042" in json.dumps(refunded)
    folder = worker.log_path.parent
    assert json.loads((folder / "refunds.jsonl").read_text()) == {
        "order_id": "1042",
        "amount_usd": 25.0,
    }
    # The application's workflow ran in turnkeeper's sandbox and converter, as it did before.
    assert sent == "sent INV-7"
    assert json.loads((folder / "invoices.jsonl").read_text()) == {
        "number": "INV-7",
        "total_usd": 12.5,
    }
