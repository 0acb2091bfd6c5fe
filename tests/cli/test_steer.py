"""`turnkeeper steer` and `turnkeeper interrupt` against a turn waiting for an approval: the
steer is accepted, the interrupt ends the turn interrupted, and both are refused with the turn's
reason once it has ended; an empty message never reaches the turn."""

from __future__ import annotations

from turnkeeper.contracts.turn import AgentReport

from tests.conftest import TurnRunner, new_key, scripted_request, wait_for_pending
from tests.support.console_runs import (  # noqa: F401 (restore_logging: an autouse fixture)
    address_of,
    invoke,
    restore_logging,
)
from turnkeeper.testing import fake_anthropic as fake

WRITE = ("write_file", {"path": "out.md", "content": "hello"})


async def test_steer_then_interrupt_from_the_console(turns: TurnRunner) -> None:
    key = new_key()
    turns.fake.script(key, [fake.tool_calls(WRITE), fake.text("never")])
    handle = await turns.start(scripted_request(key, agent={"tools": ["write_file"]}))
    await wait_for_pending(handle)
    address = address_of(turns.client)

    empty = await invoke("steer", handle.id, " ", *address)
    steered = await invoke("steer", handle.id, "Use out2.md.", "--author", "alice", *address)
    stopped = await invoke("interrupt", handle.id, "--reason", "wrong", *address)
    report: AgentReport = await handle.result()
    late = await invoke("steer", handle.id, "Too late.", *address)

    assert empty.exit_code == 2 and "a steer needs a message" in empty.output
    assert steered.exit_code == 0, steered.output
    assert "before the model call of iteration 2" in steered.output
    assert stopped.exit_code == 0 and "outcome interrupted" in stopped.output
    assert report.outcome == "interrupted"
    assert [(i.kind, i.text) for i in report.interventions] == [
        ("steer", "Use out2.md."),
        ("interrupt", "wrong"),
    ]
    assert late.exit_code == 1 and "has ended" in late.output
