"""Build B of the turn, for the upgrade test: a workflow change that cannot replay build A's
histories (its first command is a memo upsert that A's histories do not have), registered under
the same workflow type. Without worker versioning, every turn started under A would fail its next
workflow task on a B worker."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, VersioningBehavior

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.names import WORKFLOW_TYPE
    from turnkeeper.contracts.turn import AgentReport
    from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow

BUILD_MEMO = "built_by"


@workflow.defn(name=WORKFLOW_TYPE, versioning_behavior=VersioningBehavior.PINNED)
class BuildBTurnWorkflow(AgentTurnWorkflow):
    @workflow.init
    def __init__(self, request: RawValue, carried: Any = None) -> None:
        super().__init__(request, carried)

    @workflow.run
    async def run(self, request: RawValue, carried: Any = None) -> AgentReport:
        workflow.upsert_memo({BUILD_MEMO: "B"})
        return await super().run(request, carried)
