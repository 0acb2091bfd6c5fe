"""Workflow code: deterministic, replayed from history, no I/O of its own (`ruff.toml` bans it).

Where to start reading: `agent_turn_workflow.py`, `_run` then `_loop` and `_iterate` (one
iteration: budgets, model call, tools); then `turn_state.py`, everything a turn remembers,
and `turn_parts.py`, the parts it is made of; then `model_calls.call` and
`tool_calls.ToolCalls.dispatch`, the two things an iteration does.

The loop
    agent_turn_workflow.py   `AgentTurnWorkflow`: one turn as a durable tool loop, its handlers.
    turn_state.py            `Turn`: the state a turn owns and carries across continue-as-new.
    turn_parts.py            The parts of a `Turn` that own their state (spend, approvals, …).
    inputs/handlers.py        The handlers' payloads decoded and validated (turn and session).
    plaintext.py             Refusing what arrived unencrypted at a worker requiring encryption.
    failures.py              How a turn fails: a typed error carrying the partial report.
    activity_options.py      Timeouts and retry policies of the turn's activities.
    activity_calls.py        The one way to call an activity; what its failure means, by name.

Budgets
    budgets/checks.py               Limits, what is left, and the checks before each model call.
    budget_extension.py      A pausing turn's wait for a human to extend a spent budget.

Model calls
    llm/calls.py           The turn's one model call: compaction, input, failure mapping.
    llm/activity.py        The activity through the fallback chain (the one loop).
    llm/fallback.py              The fallback chain's plan and per-model cooldown.
    compaction.py            Leaving old exchanges out, or summarizing them, before a call.
    llm/context_window.py        What a compacting turn sends, and how many tokens that is.
    llm/conversation_compaction.py  Compaction of a conversation a turn continues by reference.
    answer/structured_output.py     `agent.output_schema`: the answer must be JSON that fits it.
    output_validation.py     `agent.output_validators`: the worker's checks of the answer.

Tools and approvals
    tools/calls.py            Settling one response's tool calls, one `tool_result` each.
    tools/retries.py          When a worker tool may run again, and what the model is told.
    tools/mcp.py             MCP tools: discovered at the start, called as activities.
    approvals/pending.py         Calls waiting for a human's decision or a caller's result.
    approvals/decision_checks.py       Whether a human's decision may apply to the turn now.
    approvals/signatures.py      Signed decisions and budget extensions of keyed approvers.
    approvals/standing.py    `remember: true`: tools later turns of an agent run unasked.
    approvals/approval_cache_workflow.py  `ApprovalCacheWorkflow`: an agent's standing approvals.

Sessions
    sessions/agent_session_workflow.py  `AgentSessionWorkflow`: one conversation of many turns.
    sessions/state.py         The state a session owns and carries.
    sessions/stored_conversations.py  The activities that read and write a stored conversation.

Observation
    observation/             Every channel that shows a turn or session from outside (record,
                             event stream, search attributes, span, metrics), fed by
                             `observation/turn_observer.py`; its `__init__` maps it.
"""
