"""A question an MCP server asks inside a task, as the workflow and its activities exchange it.

2026-07-28 (the `io.modelcontextprotocol/tasks` extension): a `tasks/get` answer in status
`input_required` carries `inputRequests`, each an `elicitation/create` under a key; the workflow
asks a person for each and the `mcp_answer_task` activity sends the answers with `tasks/update`.
2025-11-25: the server sends its `elicitation/create` only on a `tasks/result` request; the
`mcp_task_input` activity makes that request and answers on the spot through the
`mcp_elicitation` update, as for a plain call. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import JsonValue
from turnkeeper.contracts.contract_model import ContractModel
from turnkeeper.contracts.mcp import McpTaskHandle
from turnkeeper.contracts.mcp_elicitation import ElicitationAnswer, ElicitationAsked

ACTIVITY_MCP_ANSWER_TASK: Final = "mcp_answer_task"
ACTIVITY_MCP_TASK_INPUT: Final = "mcp_task_input"
ELICITATION_METHOD: Final = "elicitation/create"


class McpTaskAnswerInput(ContractModel):
    """The input of `mcp_answer_task`: a person's answers to a task's questions, by key."""

    turn_id: str = ""
    """Only to correlate the worker's logs with the turn."""
    call_id: str
    """The id of the tool call the task answers."""
    task: McpTaskHandle
    """The task that asked."""
    answers: dict[str, ElicitationAnswer]
    """The answers, under the keys of the server's `inputRequests`."""


class McpTaskAnswerResult(ContractModel):
    """The `mcp_answer_task` activity's result."""

    sent: bool
    """The server took `tasks/update`."""
    detail: str = ""
    """Why it did not, when it did not."""


def asked_in_task(
    input_requests: dict[str, JsonValue] | None,
) -> tuple[list[ElicitationAsked], list[str]]:
    """The form questions among a task's `inputRequests` (each with its key, in key order), and
    the keys of the requests no person can answer (sampling, roots, URL elicitations, garbage)."""
    asked: list[ElicitationAsked] = []
    unanswerable: list[str] = []
    for key, request in sorted((input_requests or {}).items()):
        question = _form_question(key, request)
        if question is None:
            unanswerable.append(key)
        else:
            asked.append(question)
    return asked, unanswerable


def _form_question(key: str, request: Any) -> ElicitationAsked | None:
    if not isinstance(request, dict) or request.get("method") != ELICITATION_METHOD:
        return None
    params = request.get("params")
    if not isinstance(params, dict) or params.get("mode", "form") != "form":
        return None
    message, schema = params.get("message"), params.get("requestedSchema")
    if not isinstance(message, str) or not isinstance(schema, dict):
        return None
    return ElicitationAsked(key=key, message=message, requested_schema=schema)
