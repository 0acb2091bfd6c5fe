"""Temporal names that callers and histories depend on. Never rename one after a release."""

from typing import Final

DEFAULT_TASK_QUEUE: Final = "agent-turns"
TASK_QUEUE_ENV: Final = "AGENT_TASK_QUEUE"

WORKFLOW_TYPE: Final = "AgentTurnWorkflow"
SESSION_WORKFLOW_TYPE: Final = "AgentSessionWorkflow"

SIGNAL_APPROVE: Final = "approve"
SIGNAL_SUBMIT_TOOL_RESULT: Final = "submit_tool_result"
# A session's turn tells its session when it starts or stops waiting for a human.
SIGNAL_TURN_STATE: Final = "turn_state"
# A sub-agent's turn tells its parent which calls wait in it (and in its own sub-agents).
SIGNAL_SUBAGENT_PENDING: Final = "subagent_pending"
SIGNAL_SUBAGENT_CANCELLED: Final = "subagent_cancelled"
UPDATE_DECIDE: Final = "decide"
UPDATE_EXTEND_BUDGET: Final = "extend_budget"
UPDATE_STEER: Final = "steer"
UPDATE_INTERRUPT: Final = "interrupt"
# An approver's (signed) cancellation: the turn checks it, then asks Temporal to cancel it.
UPDATE_CANCEL: Final = "cancel"
QUERY_STATUS: Final = "status"
QUERY_DECISIONS: Final = "decisions"
QUERY_TRANSCRIPT: Final = "transcript"

# Of a session (`AgentSessionWorkflow`); its `status` query shares the turn's name.
UPDATE_SEND: Final = "send"
UPDATE_CLOSE: Final = "close"
QUERY_MESSAGES: Final = "messages"

ACTIVITY_MODEL_CALL: Final = "model_call"
ACTIVITY_TOOL_CALL: Final = "tool_call"
ACTIVITY_SANDBOX_CALL: Final = "sandbox_call"
ACTIVITY_LOAD_CONVERSATION: Final = "load_conversation"
ACTIVITY_STORE_CONVERSATION: Final = "store_conversation"
ACTIVITY_VALIDATE_OUTPUT: Final = "validate_output"
ACTIVITY_CHECK_GUARDRAILS: Final = "check_guardrails"
ACTIVITY_DESCRIBE_SKILLS: Final = "describe_skills"
# A workflow cannot request its own cancellation (the server answers "not found"): an accepted
# `cancel` update asks for it through this activity, so the turn ends as any cancellation ends it.
ACTIVITY_CANCEL_TURN: Final = "cancel_turn"
# The difference a `write_file` call would make, read where the file lives before it waits.
ACTIVITY_WRITE_PREVIEW: Final = "write_preview"
# A request's images and documents that came with their bytes (the `temporal` CLI's base64, a
# URL): stored on first sight, so that the turn holds their references from then on.
ACTIVITY_STORE_ATTACHMENTS: Final = "store_attachments"

SA_AGENT_ID: Final = "AgentId"
SA_TASK_ID: Final = "TaskId"
SA_TURN_STATE: Final = "TurnState"
SA_COST_USD: Final = "CostUsd"
SA_LLM_CALLS: Final = "LlmCalls"
SA_TOOL_CALLS: Final = "ToolCalls"
# On a session and on each of its turns, so that `SessionId = "…"` lists the whole conversation.
SA_SESSION_ID: Final = "SessionId"
SA_SESSION_STATE: Final = "SessionState"
# The request's `tenant`, on a turn and on a session.
SA_TENANT_ID: Final = "TenantId"
# The identity that started the turn, as the HTTP API signed it in (`turnkeeper serve`); set by
# the runtime at the start, never taken from the request.
SA_STARTED_BY: Final = "StartedBy"
# On an evaluation run: "<ended>/<all>" case turns (cases × models × repetitions), so that the
# Web UI's list shows a run's progress beside its `CostUsd`. One Keyword, not two Ints: the dev
# server's SQLite visibility allows three Int attributes per namespace, and turns hold two.
SA_EVAL_PROGRESS: Final = "EvalProgress"

# name -> Temporal indexed value type, as `temporal operator search-attribute create` spells it
SEARCH_ATTRIBUTES: Final[dict[str, str]] = {
    SA_AGENT_ID: "Keyword",
    SA_TASK_ID: "Keyword",
    SA_TURN_STATE: "Keyword",
    SA_COST_USD: "Double",
    SA_LLM_CALLS: "Int",
    SA_TOOL_CALLS: "Int",
    SA_SESSION_ID: "Keyword",
    SA_SESSION_STATE: "Keyword",
    SA_TENANT_ID: "Keyword",
    SA_STARTED_BY: "Keyword",
    SA_EVAL_PROGRESS: "Keyword",
}

# Providers the worker ships. Kept here so a request naming any other provider is refused at the
# start of the turn instead of failing on every retry of the first model call.
PROVIDER_ANTHROPIC: Final = "anthropic"
PROVIDER_DEMO: Final = "demo"
# Any OpenAI-compatible Chat Completions endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
PROVIDER_OPENAI: Final = "openai"
KNOWN_PROVIDERS: Final = frozenset({PROVIDER_ANTHROPIC, PROVIDER_DEMO, PROVIDER_OPENAI})
# Named endpoints (`TURNKEEPER_PROVIDERS`) live in the worker's environment, which neither the
# client nor the workflow can read: a model string may name any provider spelled like this, and
# a worker without it refuses the call with LLMInvalidRequest at the first model call.
PROVIDER_NAME_PATTERN: Final = r"^[a-z][a-z0-9_-]{0,31}$"
PROVIDERS_ENV: Final = "TURNKEEPER_PROVIDERS"

# The OpenTelemetry meter of every turnkeeper metric: the activities' and the turn's own.
METER_NAME: Final = "turnkeeper"
