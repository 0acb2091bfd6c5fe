"""The support team's own Temporal workflow, older than its agent: after a ticket, send the
customer a satisfaction survey. Plain Temporal (a dataclass input, one activity); `own_worker.py`
runs it in the same worker as the agent's turns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow


@dataclass
class SurveyRequest:
    order_id: str
    email: str


@activity.defn
async def send_survey(request: SurveyRequest) -> str:
    """Send the survey; a real team would call its mailer here."""
    return f"survey for order {request.order_id} sent to {request.email}"


@workflow.defn
class SurveyWorkflow:
    @workflow.run
    async def run(self, request: SurveyRequest) -> str:
        return await workflow.execute_activity(
            send_survey, request, start_to_close_timeout=timedelta(seconds=30)
        )
