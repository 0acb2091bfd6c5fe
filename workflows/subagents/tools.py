"""How a sub-agent is offered to the model: a tool of its `name` and `description` whose input
is the task it is handed."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.turn import ExternalToolSpec, TurnRequest

# The input every sub-agent takes: the task it is handed.
TASK_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "The task to hand over"}},
    "required": ["task"],
    "additionalProperties": False,
}


def subagent_tools(request: TurnRequest) -> list[ExternalToolSpec]:
    """The tool definitions of the request's sub-agents."""
    return [
        ExternalToolSpec(
            name=spec.name,
            description=spec.description or f"Hand a task to the {spec.agent.id} agent",
            input_schema=TASK_SCHEMA,  # type: ignore[arg-type]
        )
        for spec in request.agent.subagents
    ]
