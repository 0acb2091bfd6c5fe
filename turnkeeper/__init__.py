"""turnkeeper: durable AI-agent turns on Temporal. One agent turn is one workflow; your tools are
typed functions; budgets, approvals and the model calls survive any crash.

    import turnkeeper

    @turnkeeper.tool(requires_approval=True, idempotent=False)
    async def refund(order_id: str, amount_usd: float) -> str:
        \"\"\"Refund part or all of an order.\"\"\"
        ...

    await turnkeeper.run_worker(tools=[refund])                     # a worker process
    plugin = turnkeeper.TurnkeeperPlugin(tools=[refund])            # or in your own Worker

    client = await turnkeeper.connect()                             # anywhere else
    handle = await turnkeeper.start_turn(client, agent={...}, task={...})
    report = await handle.result()

    chat = await turnkeeper.start_session(client, session_id="s-1", agent={...})
    turn = await chat.send("Hello")                                 # a turn that remembers

`__all__` is the whole public surface; every other module is internal. Names are imported on
first use, so `import turnkeeper` stays cheap and workflow sandboxes never load the worker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "Agent",
    "AgentReport",
    "AutonomyBoundaryViolation",
    "Block",
    "BudgetExtension",
    "BudgetRequest",
    "CassetteMiss",
    "CompactedHistory",
    "Compaction",
    "Constraints",
    "DecisionRecord",
    "DecisionRefused",
    "EncryptionRequired",
    "ExtendBudgetResult",
    "GuardrailBlocked",
    "Image",
    "InvalidSchedule",
    "InvalidSessionRequest",
    "InvalidTurnRequest",
    "LLMAuthError",
    "LLMContentFiltered",
    "LLMContextTooLong",
    "LLMInvalidRequest",
    "LLMUnavailable",
    "MaxIterationsExceeded",
    "Message",
    "OutputRejected",
    "OutputValidatorError",
    "PendingCall",
    "Redact",
    "RuntimeIdTaken",
    "ScheduleNotFound",
    "ScheduleTaken",
    "ScheduleView",
    "ScheduledRun",
    "SessionHandle",
    "SessionRefused",
    "SessionStatus",
    "Skill",
    "Subagent",
    "Task",
    "ToolArgumentsInvalid",
    "ToolContext",
    "ToolError",
    "TurnBudgetExceeded",
    "TurnCancelled",
    "TurnError",
    "TurnEvent",
    "TurnHandle",
    "TurnInternalError",
    "TurnRequest",
    "TurnSchedule",
    "TurnStatus",
    "TurnkeeperPlugin",
    "WaitingTurn",
    "connect",
    "evaluator",
    "exit_without_teardown",
    "guardrail",
    "list_schedules",
    "output_validator",
    "pending",
    "run_worker",
    "schedule_turn",
    "session",
    "signal_event",
    "start_session",
    "start_turn",
    "tool",
    "turn",
    "turn_schedule",
]

# name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    "tool": ("turnkeeper.activities.tools.registry", "worker_tool"),
    "ToolContext": ("turnkeeper.activities.tools.registry", "ToolContext"),
    "ToolError": ("turnkeeper.activities.tools.registry", "ToolError"),
    "output_validator": ("turnkeeper.activities.output.validators", "output_validator"),
    "OutputRejected": ("turnkeeper.activities.output.validators", "OutputRejected"),
    "evaluator": ("turnkeeper.activities.evals.registered", "evaluator"),
    "Skill": ("turnkeeper.activities.skills.skill", "Skill"),
    "guardrail": ("turnkeeper.activities.guardrails.guardrails", "guardrail"),
    "Redact": ("turnkeeper.activities.guardrails.guardrails", "Redact"),
    "Block": ("turnkeeper.activities.guardrails.guardrails", "Block"),
    "run_worker": ("turnkeeper.worker.run", "run_worker"),
    "TurnkeeperPlugin": ("turnkeeper.worker.plugin", "TurnkeeperPlugin"),
    "connect": ("turnkeeper.client.connection", "connect"),
    "exit_without_teardown": ("turnkeeper.ground.process_exit", "exit_without_teardown"),
    "start_turn": ("turnkeeper.client.client", "start_turn"),
    "signal_event": ("turnkeeper.client.agent_events", "signal_event"),
    "turn": ("turnkeeper.client.client", "turn"),
    "pending": ("turnkeeper.client.client", "pending"),
    "schedule_turn": ("turnkeeper.client.schedules", "schedule_turn"),
    "turn_schedule": ("turnkeeper.client.schedules", "turn_schedule"),
    "list_schedules": ("turnkeeper.client.schedules", "list_schedules"),
    "TurnSchedule": ("turnkeeper.client.schedules", "TurnSchedule"),
    "ScheduleNotFound": ("turnkeeper.client.schedules", "ScheduleNotFound"),
    "ScheduleTaken": ("turnkeeper.client.schedules", "ScheduleTaken"),
    "InvalidSchedule": ("turnkeeper.contracts.schedules", "InvalidSchedule"),
    "ScheduleView": ("turnkeeper.contracts.schedules", "ScheduleView"),
    "ScheduledRun": ("turnkeeper.contracts.schedules", "ScheduledRun"),
    "start_session": ("turnkeeper.client.sessions", "start_session"),
    "session": ("turnkeeper.client.sessions", "session"),
    "SessionHandle": ("turnkeeper.client.sessions", "SessionHandle"),
    "SessionStatus": ("turnkeeper.contracts.session", "SessionStatus"),
    "TurnHandle": ("turnkeeper.client.client", "TurnHandle"),
    "WaitingTurn": ("turnkeeper.client.turns", "WaitingTurn"),
    "TurnRequest": ("turnkeeper.contracts.turn", "TurnRequest"),
    "Agent": ("turnkeeper.contracts.turn", "AgentSpec"),
    "Task": ("turnkeeper.contracts.turn", "TaskSpec"),
    "Subagent": ("turnkeeper.contracts.turn", "SubagentSpec"),
    "Constraints": ("turnkeeper.contracts.turn", "Constraints"),
    "AgentReport": ("turnkeeper.contracts.turn", "AgentReport"),
    "Message": ("turnkeeper.contracts.messages", "Message"),
    "Image": ("turnkeeper.contracts.attachments", "Image"),
    "TurnEvent": ("turnkeeper.contracts.events", "TurnEvent"),
    "TurnStatus": ("turnkeeper.contracts.signals", "TurnStatus"),
    "PendingCall": ("turnkeeper.contracts.signals", "PendingCall"),
    "DecisionRecord": ("turnkeeper.contracts.signals", "DecisionRecord"),
    "BudgetRequest": ("turnkeeper.contracts.budget_extension", "BudgetRequest"),
    "BudgetExtension": ("turnkeeper.contracts.budget_extension", "BudgetExtension"),
    "ExtendBudgetResult": ("turnkeeper.contracts.budget_extension", "ExtendBudgetResult"),
    "Compaction": ("turnkeeper.contracts.compaction", "CompactionSpec"),
    "CompactedHistory": ("turnkeeper.contracts.compaction", "CompactedHistory"),
    **{
        name: ("turnkeeper.client.errors", name)
        for name in (
            "TurnError",
            "InvalidTurnRequest",
            "EncryptionRequired",
            "TurnBudgetExceeded",
            "MaxIterationsExceeded",
            "AutonomyBoundaryViolation",
            "ToolArgumentsInvalid",
            "OutputValidatorError",
            "GuardrailBlocked",
            "TurnInternalError",
            "LLMAuthError",
            "LLMInvalidRequest",
            "LLMContextTooLong",
            "LLMContentFiltered",
            "LLMUnavailable",
            "CassetteMiss",
            "RuntimeIdTaken",
            "TurnCancelled",
            "DecisionRefused",
            "InvalidSessionRequest",
            "SessionRefused",
        )
    },
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'turnkeeper' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from turnkeeper.activities.evals.registered import evaluator
    from turnkeeper.activities.guardrails.guardrails import Block, Redact, guardrail
    from turnkeeper.activities.output.validators import OutputRejected, output_validator
    from turnkeeper.activities.skills.skill import Skill
    from turnkeeper.activities.tools.registry import ToolContext, ToolError
    from turnkeeper.activities.tools.registry import worker_tool as tool
    from turnkeeper.client.agent_events import signal_event
    from turnkeeper.client.client import TurnHandle, pending, start_turn, turn
    from turnkeeper.client.connection import connect
    from turnkeeper.client.errors import (
        AutonomyBoundaryViolation,
        CassetteMiss,
        DecisionRefused,
        EncryptionRequired,
        GuardrailBlocked,
        InvalidSessionRequest,
        InvalidTurnRequest,
        LLMAuthError,
        LLMContentFiltered,
        LLMContextTooLong,
        LLMInvalidRequest,
        LLMUnavailable,
        MaxIterationsExceeded,
        OutputValidatorError,
        RuntimeIdTaken,
        SessionRefused,
        ToolArgumentsInvalid,
        TurnBudgetExceeded,
        TurnCancelled,
        TurnError,
        TurnInternalError,
    )
    from turnkeeper.client.schedules import (
        ScheduleNotFound,
        ScheduleTaken,
        TurnSchedule,
        list_schedules,
        schedule_turn,
        turn_schedule,
    )
    from turnkeeper.client.sessions import SessionHandle, session, start_session
    from turnkeeper.client.turns import WaitingTurn
    from turnkeeper.contracts.attachments import Image
    from turnkeeper.contracts.budget_extension import (
        BudgetExtension,
        BudgetRequest,
        ExtendBudgetResult,
    )
    from turnkeeper.contracts.compaction import CompactedHistory
    from turnkeeper.contracts.compaction import CompactionSpec as Compaction
    from turnkeeper.contracts.events import TurnEvent
    from turnkeeper.contracts.messages import Message
    from turnkeeper.contracts.schedules import InvalidSchedule, ScheduledRun, ScheduleView
    from turnkeeper.contracts.session import SessionStatus
    from turnkeeper.contracts.signals import DecisionRecord, PendingCall, TurnStatus
    from turnkeeper.contracts.turn import AgentReport, Constraints, TurnRequest
    from turnkeeper.contracts.turn import AgentSpec as Agent
    from turnkeeper.contracts.turn import SubagentSpec as Subagent
    from turnkeeper.contracts.turn import TaskSpec as Task
    from turnkeeper.worker.plugin import TurnkeeperPlugin
    from turnkeeper.worker.run import run_worker
