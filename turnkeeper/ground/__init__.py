"""The ground floor, below workflows and activities: what several rooms share that is not a
contract, because it does something (logs, calls a workflow), and that would otherwise drag one
room's code into another's. Workflow code imports none of it: it does I/O.

    logs.py               How turnkeeper's code logs inside someone else's process.
    tenant_ledger.py      One update-with-start to a tenant's ledger workflow, from outside it.
    ledger_busy.py        When a ledger is too busy for an update; this process's asks of it.
    runtime_workflows.py  A workflow id the runtime keeps for its own workflows, held by another.
    process_exit.py       Ending a process that used a Temporal client, without teardown.
    sandbox_archive.py    Taking a file out of a sandbox folder's archive, in memory.

The activities, the worker, the HTTP API and the library client import these; so may any room
above the line. They import only `contracts` (pyproject's import-linter contracts): the library
client reaches its tenant's ledger and logs without loading a single activity.
"""
