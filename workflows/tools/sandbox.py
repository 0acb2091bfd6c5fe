"""`run_python` and `run_shell` calls: each runs as `sandbox_call` with the turn's sandbox folder
as its previous call left it, and the folder it returns becomes the turn's.

The folder is a content-store reference kept in the turn's state (`Tools.sandbox`), so it is in
history, survives a worker's crash and travels across continue-as-new; every turn, and every
sub-agent's (a child turn with state of its own), starts with a folder of its own. Calls are
routed here by the `sandboxed` trait the worker reported in the first model call's result, so
a turn recorded before this feature (or calling a tool of its own named `run_python`) keeps its
commands.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.activity_io import ToolCallResult
    from turnkeeper.contracts.messages import ToolUseBlock
    from turnkeeper.contracts.names import ACTIVITY_SANDBOX_CALL
    from turnkeeper.contracts.sandbox_io import SandboxCallInput, SandboxCallResult
    from turnkeeper.workflows.activity_calls import AnswerModel, execute
    from turnkeeper.workflows.turn_state import Turn


def is_sandbox_call(turn: Turn, tool: str) -> bool:
    traits = turn.tools.tool_traits.get(tool)
    return traits is not None and traits.sandboxed


async def call(
    turn: Turn, use: ToolUseBlock, told: AnswerModel, options: workflow.ActivityConfig
) -> ToolCallResult | str:
    """Runs `use` in the turn's sandbox; a string when the call did not complete (as `execute`
    answers for any worker tool)."""
    state = turn.tools.sandbox
    call_input = SandboxCallInput(
        call_id=use.id,
        tool=use.name,
        input=use.input,
        spec=turn.request.agent.sandbox,
        state_ref=state.ref if state is not None else None,
        stream_output=turn.request.agent.stream,
    )
    result = await execute(
        ACTIVITY_SANDBOX_CALL, call_input, told, result_type=SandboxCallResult, options=options
    )
    if isinstance(result, SandboxCallResult) and result.state is not None:
        turn.tools.saved_sandbox(result.state)
    return result
