"""Activities: everything a turn does to the world (models, tools, stores), each a thin wrapper
over plain functions. Each room's `__init__` maps its own modules; `tests/unit/test_room_maps.py`
keeps this map of the rooms complete.

What every activity wrapper uses
    defects.py          A defect of ours fails its call once, typed, instead of posing as an outage.
    heartbeating.py     Heartbeats for activities that wait on something slow.
    turn_identity.py    The turn an activity works for, from the activity's own info.
    credentials.py      Keys and tokens read from a file or a command, read again after a 401.
    verdicts.py         What the judges of a turn's text share: the turn's id, a clipped reason.

llm/            The model-call activity and the steps of a call.
providers/      The model providers behind it: one `ModelProvider` per API, cassettes, endpoints.
tools/          Worker tools: the registry, the built-in workspace tools, the tool-call and
                write-preview activities.
mcp/            MCP servers as tools of a turn: configuration, connections, their activities.
a2a/            Remote A2A agents as tools of a turn: configuration, cards, their activities.
attachments/    Images and documents: stored on first sight, read back for each model call.
sandbox/        `run_python` and `run_shell`: bubblewrap runs, their limits, the folder's archive.
skills/         Skills on the worker: the catalog, `describe_skills`, the built-in skill tools.
output/         The worker's checks of a final answer (`agent.output_validators`), as an activity.
guardrails/     The worker's guardrails (`agent.guardrails`): `@turnkeeper.guardrail`, the built-in
                `secrets` and `size_cap`, and the `check_guardrails` activity.
policies/       The worker's Cedar policy files (`TURNKEEPER_POLICY_FILE`): read, reloaded, and
                what they decide for a tool call.
evals/          Scoring of evaluation cases: datasets, turn-fact and registered scorers.
store/          The stored conversation, as activities.
runtime/        Activities that reach the runtime's own workflows (an agent's standing approvals,
                a turn's cancellation) through the worker's client, and the worker's bound on
                one `wait`.
observation/    OpenInference spans and OpenTelemetry metrics of model and tool calls.
"""
