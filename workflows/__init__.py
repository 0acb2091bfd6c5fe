"""Workflow code: deterministic, replayed from history, no I/O of its own (`ruff.toml` bans it).

Where to start reading: `agent_turn_workflow.py`, `_run` then `_loop` and `_iterate` (one
iteration: budgets, model call, tools); then `turn_state.py`, everything a turn remembers,
and `turn_parts.py`, the parts it is made of; then `llm/calls.call` and
`tools/calls.ToolCalls.dispatch`, the two things an iteration does.

The loop sits at the top; each room below it holds what one kind of change touches, drawn from
who imports whom (`tests/unit/test_room_maps.py` keeps this map complete).

The loop
    agent_turn_workflow.py   `AgentTurnWorkflow`: one turn as a durable tool loop, its handlers.
    turn_state.py            `Turn`: the state a turn owns and carries across continue-as-new.
    turn_parts.py            The parts of a `Turn` that own their state (spend, approvals, …).
    failures.py              How a turn fails: a typed error carrying the partial report.
    activity_options.py      Timeouts and retry policies of the turn's activities.
    activity_calls.py        The one way to call an activity; what its failure means, by name.

inputs/         What a turn or a session accepts (the request's own checks are in contracts/).
    handlers.py              The handlers' payloads decoded and validated (turn and session).
    plaintext.py             Refusing what arrived unencrypted at a worker requiring encryption.
    placement.py             Where a turn may run: its workflow id and its `parent`.
    schedule_origin.py       Which schedule started a turn (`TemporalScheduledById` and its id).

budgets/        What a turn may spend, and what happens when it is spent.
    checks.py                Limits, what is left, and the checks before each model call.
    extension.py             A pausing turn's wait for a human to extend a spent budget.
    tenant_caps.py           A turn whose tenant is at a spend cap: it fails, or waits.

llm/            The turn's model call.
    calls.py                 The one model call of the loop: compaction, input, failure mapping.
    activity.py              The activity through the fallback chain (the one loop).
    fallback.py              The fallback chain's plan and per-model cooldown.
    compaction.py            Leaving old exchanges out, or summarizing them, before a call.
    context_window.py        What a compacting turn sends, and how many tokens that is.
    conversation_compaction.py  Compaction of a conversation a turn continues by reference.

attachments/    A turn's images and documents.
    first_sight.py           Those that came with their bytes, stored before anything else.

answer/         The final answer's checks.
    structured_output.py     `agent.output_schema`: the answer must be JSON that fits it.
    validation.py            `agent.output_validators`: the worker's checks of the answer.

guardrails/     `agent.guardrails`: the worker's checks of the input, tool results and answer.
    checks.py                The three stages: the input, each response's tool results, the answer.
    decisions.py             The turn's part that records every guardrail verdict.

tools/          Tool calls, settled one `tool_result` each.
    calls.py                 Settling one response's tool calls: run, wait, or refuse each.
    retries.py               When a worker tool may run again, and what the model is told.
    approval_view.py         What an approver reads beside a call: words before it, a diff.
    mcp.py                   MCP tools: discovered at the start, called as activities.
    mcp_elicitation.py       An MCP server's question mid-call: the turn waits for a person.
    mcp_tasks.py             An MCP call answered with a task: polled between timers.
    mcp_task_questions.py    A question asked inside a task: a person answers, the task goes on.
    a2a.py                   Remote A2A agents: cards read at the start, each call a task followed.
    skills.py                `agent.skills`: described once, their tools and prompt part.
    sandbox.py               `run_python`, `run_shell`: each call gets and keeps the turn's folder.

approvals/      What approvers do in a running turn.
    pending.py               Calls waiting for a human's decision or a caller's result.
    decision_checks.py       Whether a human's decision may apply to the turn now.
    signatures.py            Signed decisions and budget extensions of keyed approvers.
    standing.py              `remember: true`: tools later turns of an agent run unasked.
    approval_cache_workflow.py  `ApprovalCacheWorkflow`: an agent's standing approvals.
    steering.py              `steer` and `interrupt`: a human's word in a running turn.
    cancel.py                An approver's `cancel`, ending the turn as a client's would.

waits/          The built-in `wait` tool: a durable timer, the events a turn waits for.
    tool.py                  A `wait` call carried out; the tool's definition for the model.
    book.py                  The waits in progress and the events delivered (deduplicated).

subagents/      Sub-agents: child turns the model calls as tools.
    calls.py                 A sub-agent's call as a child `AgentTurnWorkflow`, its report.
    budget.py                What a child inherits: budgets left, the autonomy boundary.
    relay.py                 Approvals at any depth, decided at the root.
    tools.py                 How a sub-agent is offered to the model as a tool.

sessions/       Conversations of many turns.
    agent_session_workflow.py  `AgentSessionWorkflow`: one conversation of many turns.
    state.py                 The state a session owns and carries.
    stored_conversations.py  The activities that read and write a stored conversation.

evals/          Evaluation runs: a dataset's cases as child turns, scored.
    eval_run_workflow.py     `EvalRunWorkflow`: cases at most C at a time, in batches.
    cases.py                 A case's turn id and request, pure.
    shown_progress.py        The run's progress in the Web UI's list, written at most every 2 s.

fleet/          What every turn and worker of a namespace shares.
    rate_limiter_workflow.py  `RateLimiterWorkflow`: the sliding-window ledger of one key.
    rate_window.py           The ledger's window arithmetic, pure.
    tenant_ledger_workflow.py  `TenantLedgerWorkflow`: one tenant's spend and caps.
    tenant_spend.py          A tenant's spend as its ledger keeps it, pure.
    fairness.py              Fair shares of the workers between tenants (Priority keys).

policies/       `agent.policy`: each tool call checked against the worker's Cedar policies.
    checks.py                The decision on a call, from its model call or `check_policy`.
    log.py                   The part of a turn that keeps its policy decisions.

observation/    Every channel that shows a turn or session from outside, fed by one observer.
    turn_observer.py         The one place the loop reports a step; it feeds every channel.
    turn_record.py           The turn record: structured log lines of each step.
    turn_view.py             The event stream, search attributes and current details.
    stream_retention.py      The event stream kept bounded.
    turn_tracing.py          The turn's span.
    turn_metrics.py          The turn's metrics.
    session_notes.py         The session's note of a turn's waits.
    session_view.py          The session's own search attributes and details.
"""
