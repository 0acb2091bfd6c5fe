"""What a workflow run keeps of its first activation, in malloc'd bytes per run (upb backend).

Any sub-message taken from a parsed protobuf message keeps the whole parse (its arena) alive.
The SDK keeps `workflow.info().last_completion_result`, a sub-message of the run's
`InitializeWorkflow` job even when unset, for the life of every run; so copying what a workflow
keeps of that job (our turn's `request: RawValue`) frees nothing and adds the copy. Used by
`bench.parked_memory`; `python -m bench.activation_memory` prints it alone.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.bridge.proto.workflow_activation import InitializeWorkflow, WorkflowActivation

from bench.malloc import malloc_in_use

_KEPT: dict[str, Callable[[InitializeWorkflow], Any]] = {
    "nothing": lambda job: None,
    "the SDK's last_completion_result (unset)": lambda job: job.last_completion_result,
    "that and the request payload": lambda job: (job.last_completion_result, job.arguments[0]),
    "that and a copy of the request payload": lambda job: (
        job.last_completion_result,
        Payload.FromString(job.arguments[0].SerializeToString()),
    ),
    "a copy of the request payload alone": lambda job: Payload.FromString(
        job.arguments[0].SerializeToString()
    ),
}


def _activation(request_bytes: int) -> bytes:
    activation = WorkflowActivation(run_id="run")
    job = activation.jobs.add().initialize_workflow
    job.workflow_type = "AgentTurn"
    job.workflow_id = "bench-turn"
    request = job.arguments.add()
    request.metadata["encoding"] = b"json/plain"
    request.data = json.dumps({"task": {"input": "x" * request_bytes}}).encode()
    return activation.SerializeToString()


def first_activation_kept(request_bytes: int = 2048, runs: int = 1000) -> dict[str, int]:
    """malloc'd bytes per run for each way of keeping parts of a parsed first activation."""
    wire = _activation(request_bytes)
    result: dict[str, int] = {}
    for name, keep in _KEPT.items():
        gc.collect()
        before = malloc_in_use()
        kept = [
            keep(WorkflowActivation.FromString(wire).jobs[0].initialize_workflow)
            for _ in range(runs)
        ]
        gc.collect()
        result[name] = (malloc_in_use() - before) // runs
        del kept
    return result


if __name__ == "__main__":
    print(json.dumps(first_activation_kept(), indent=2))
