"""What the activities that judge a turn's text (output validators, guardrails) share: the
turn they judge for, for their log lines, and the clipping of a judge's reason, which joins
the report and the model's context."""

from __future__ import annotations

from temporalio import activity


def judged_turn_id() -> str:
    """The workflow id of the turn whose activity runs; empty outside an activity (a test)."""
    return activity.info().workflow_id if activity.in_activity() else ""


def clipped(reason: str, limit: int) -> str:
    """`reason`, cut to `limit` characters with an ellipsis when it is longer."""
    if len(reason) <= limit:
        return reason
    return reason[: limit - 1] + "…"
