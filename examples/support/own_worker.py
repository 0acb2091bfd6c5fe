"""The support team's own Temporal worker, with turnkeeper added to it: one process runs its
`SurveyWorkflow` and the agent's turns with `lookup_order` and `refund`.

    python examples/support/own_worker.py      # against TEMPORAL_ADDRESS (default localhost:7233)

`worker.py` is the same agent as a worker of turnkeeper's alone; this one is for a team that
already builds its own `Client` and `Worker`. Needs ANTHROPIC_API_KEY; polls AGENT_TASK_QUEUE
(default `agent-turns`), where `client.py` starts its turns. Ctrl-C stops it.
"""

from __future__ import annotations

import asyncio
import os

from surveys import SurveyWorkflow, send_survey
from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker
from tools import lookup_order, refund

import turnkeeper


async def main() -> None:
    plugin = turnkeeper.TurnkeeperPlugin(tools=[lookup_order, refund], builtin_tools=False)
    # TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the profile, as the SDK reads them.
    connection = ClientConfig.load_client_connect_config()
    connection.setdefault("target_host", "localhost:7233")
    # Given to the client, the plugin also joins every worker of that client.
    client = await Client.connect(**connection, plugins=[plugin])
    worker = Worker(
        client,
        task_queue=os.environ.get("AGENT_TASK_QUEUE", "agent-turns"),
        workflows=[SurveyWorkflow],
        activities=[send_survey],
    )
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
