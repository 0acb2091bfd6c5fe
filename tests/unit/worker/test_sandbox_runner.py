"""The seam `turnkeeper.worker.sandbox_runner` relies on, checked against the installed SDK: a
run's sandbox answers the payload-context questions the same as Temporal's own runner, without
entering the sandbox, and execs each snippet from one compiled code object."""

from __future__ import annotations

import dataclasses

import pytest
import temporalio.workflow
from temporalio.api.common.v1 import Payloads
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter, WorkflowSerializationContext
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox._importer import Importer
from temporalio.worker.workflow_sandbox._runner import _fake_info
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow

from turnkeeper.worker.sandbox_runner import (
    IN_SANDBOX_GLOBAL,
    DirectContextSandboxRunner,
    compiled_snippet,
)
from turnkeeper.worker.wiring import workflow_runner


def _details() -> WorkflowInstanceDetails:
    return WorkflowInstanceDetails(
        payload_converter_factory=DataConverter.default._new_payload_converter,
        failure_converter_class=DataConverter.default.failure_converter_class,
        interceptor_classes=[],
        defn=temporalio.workflow._Definition.must_from_class(AgentTurnWorkflow),
        info=dataclasses.replace(_fake_info, workflow_id="turn-seam", namespace="seam"),
        randomness_seed=1,
        extern_functions={},
        disable_eager_activity_execution=False,
        worker_level_failure_exception_types=[],
        patch_activation_callback=None,
        last_completion_result=Payloads(),
        last_failure=Failure(),
    )


def _instance(runner: SandboxedWorkflowRunner) -> WorkflowInstance:
    return runner.create_instance(_details())


def test_the_worker_runs_this_runner_with_our_restrictions() -> None:
    runner = workflow_runner()

    assert isinstance(runner, DirectContextSandboxRunner)
    assert "turnkeeper" in runner.restrictions.passthrough_modules


async def test_a_run_keeps_its_in_sandbox_object_where_the_runner_reads_it() -> None:
    instance = _instance(workflow_runner())

    assert IN_SANDBOX_GLOBAL in instance.globals_and_locals  # type: ignore[attr-defined]


@pytest.mark.parametrize("method", ["get_serialization_context", "get_external_store_context"])
async def test_contexts_match_temporals_runner(method: str) -> None:
    restrictions = workflow_runner().restrictions
    ours = getattr(_instance(workflow_runner()), method)(None)
    theirs = getattr(_instance(SandboxedWorkflowRunner(restrictions=restrictions)), method)(None)

    assert ours == theirs
    if method == "get_serialization_context":
        assert ours == WorkflowSerializationContext(namespace="seam", workflow_id="turn-seam")


async def test_contexts_are_answered_without_entering_the_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    instance = _instance(workflow_runner())
    entered: list[Importer] = []
    applied = Importer.applied

    def counting(self: Importer):  # type: ignore[no-untyped-def]
        entered.append(self)
        return applied(self)

    monkeypatch.setattr(Importer, "applied", counting)
    instance.get_serialization_context(None)
    instance.get_external_store_context(None)

    assert entered == []


async def test_each_snippet_is_compiled_once() -> None:
    compiled_snippet.cache_clear()
    _instance(workflow_runner())
    first = compiled_snippet.cache_info()
    _instance(workflow_runner())
    second = compiled_snippet.cache_info()

    assert first.misses > 0
    assert second.misses == first.misses
    assert second.hits > first.hits
