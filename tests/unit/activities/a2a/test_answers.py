"""What a remote agent's task means for the tool call: the state in the A2A JSON words, and the
text the model reads for each state (artifacts, a question, a failure), from the SDK's types."""

from __future__ import annotations

import re

import pytest
from a2a.types.a2a_pb2 import Artifact, Message, Part, Task, TaskState, TaskStatus
from google.protobuf.struct_pb2 import Value
from turnkeeper.activities.a2a import answers


def task(state: int, said: str = "", artifacts: list[Artifact] | None = None) -> Task:
    message = Message(parts=[Part(text=said)]) if said else None
    return Task(
        id="t-1",
        context_id="c-1",
        status=TaskStatus(state=state, message=message),  # type: ignore[arg-type]
        artifacts=artifacts or [],
    )


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (TaskState.TASK_STATE_SUBMITTED, "submitted"),
        (TaskState.TASK_STATE_WORKING, "working"),
        (TaskState.TASK_STATE_INPUT_REQUIRED, "input-required"),
        (TaskState.TASK_STATE_AUTH_REQUIRED, "auth-required"),
        (TaskState.TASK_STATE_CANCELED, "canceled"),
    ],
)
def test_a_state_is_named_as_the_specification_writes_it(state: int, words: str) -> None:
    handle = answers.handle("lab", task(state))
    assert (handle.agent, handle.task_id, handle.context_id, handle.state) == (
        "lab",
        "t-1",
        "c-1",
        words,
    )


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Task(status=TaskStatus(state=TaskState.TASK_STATE_WORKING)), "its task has no id"),
        (Task(id="t-2"), "task 't-2' has no known state (unspecified)"),
    ],
)
def test_a_task_the_turn_cannot_follow_is_malformed(answer: Task, said: str) -> None:
    with pytest.raises(answers.MalformedAnswer, match=re.escape(said)):
        answers.handle("lab", answer)


def test_a_completed_task_reads_as_its_artifacts_text_and_data() -> None:
    artifacts = [
        Artifact(parts=[Part(text="report on tides")]),
        Artifact(parts=[Part(data=Value(string_value="3 tides a day"))]),
        Artifact(
            parts=[Part(url="https://x/r.pdf", filename="r.pdf", media_type="application/pdf")]
        ),
    ]
    text, is_error = answers.settled_text(
        "lab", task(TaskState.TASK_STATE_COMPLETED, "done", artifacts), "completed"
    )  # type: ignore[misc]
    assert not is_error
    assert text.startswith(
        'report on tides\n\n"3 tides a day"\n\n[file r.pdf (application/pdf): https://x/r.pdf]'
    )
    assert text.endswith("[A2A task t-1 completed]")


def test_a_completed_task_without_artifacts_reads_as_its_last_message() -> None:
    settled = answers.settled_text(
        "lab", task(TaskState.TASK_STATE_COMPLETED, "all done"), "completed"
    )
    assert settled is not None and settled[0].startswith("all done")


def test_a_question_says_how_to_answer_it_into_the_same_task() -> None:
    settled = answers.settled_text(
        "lab", task(TaskState.TASK_STATE_INPUT_REQUIRED, "Which city?"), "input-required"
    )
    assert settled is not None
    text, is_error = settled
    assert not is_error and "Which city?" in text
    assert 'call lab again with {"message": <your answer>, "task_id": "t-1"}' in text


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("failed", "failed: the database is gone"),
        ("rejected", "was rejected: the database is gone"),
        ("canceled", "was canceled: the database is gone"),
        ("auth-required", "authentication that this worker cannot give"),
    ],
)
def test_an_ended_or_unanswerable_task_is_an_error(state: str, words: str) -> None:
    settled = answers.settled_text(
        "lab", task(TaskState.TASK_STATE_FAILED, "the database is gone"), state
    )  # type: ignore[arg-type]
    assert settled is not None and settled[1] and words in settled[0]


def test_a_running_task_is_not_settled() -> None:
    assert answers.settled_text("lab", task(TaskState.TASK_STATE_WORKING), "working") is None
