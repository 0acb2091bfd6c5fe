"""What a compacting turn sends: the notes in place of the messages left out, the anchor that
keeps the question a long session turn answers, the token count the next call is checked by, and
where cuts may land. (Compacting turns on a server: tests/workflows/test_compaction.py.)"""

from __future__ import annotations

from turnkeeper.contracts.attachments import ImageBlock, StoredSource
from turnkeeper.contracts.compaction import CHARS_PER_TOKEN
from turnkeeper.contracts.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from turnkeeper.workflows.llm.context_window import (
    ContextWindow,
    counted_input,
    cuts,
    estimate_tokens,
)


def said(role: str, text: str) -> Message:
    return Message(role=role, content=[TextBlock(text=text)])  # type: ignore[arg-type]


def exchange(n: int) -> list[Message]:
    use = ToolUseBlock(id=f"t{n}", name="read_file", input={"path": f"{n}.md"})
    return [
        Message(role="assistant", content=[use]),
        Message(role="user", content=[ToolResultBlock(tool_use_id=f"t{n}", content="x" * 40)]),
    ]


CONVERSATION = [said("user", "task"), *exchange(1), *exchange(2), *exchange(3)]


def texts(message: Message) -> list[str]:
    return [block.text for block in message.content if isinstance(block, TextBlock)]


def test_an_uncut_window_sends_the_transcript_as_it_is() -> None:
    assert ContextWindow().view(CONVERSATION) == CONVERSATION
    assert ContextWindow(cut=2).view([]) == []


def test_a_cut_leaves_a_note_saying_how_many_messages_are_out() -> None:
    view = ContextWindow(cut=2).view(CONVERSATION)
    assert view[1:] == CONVERSATION[3:]
    assert texts(view[0]) == [
        "task",
        "[2 earlier messages of this conversation were left out to fit the context window.]",
    ]


def test_a_summary_takes_the_place_of_the_messages_left_out() -> None:
    view = ContextWindow(cut=4, summary="Read 1.md and 2.md.").view(CONVERSATION)
    assert texts(view[0])[1].startswith("[Summary of 4 earlier messages")
    assert texts(view[0])[1].endswith("context window:]\nRead 1.md and 2.md.")


def test_the_view_never_changes_the_transcript() -> None:
    before = [message.model_copy(deep=True) for message in CONVERSATION]
    ContextWindow(cut=4, summary="s").view(CONVERSATION)
    assert before == CONVERSATION


def test_an_anchor_left_out_still_sends_the_question_it_holds() -> None:
    session = [
        said("user", "earlier"),
        said("assistant", "ok"),
        said("user", "the question"),
        *exchange(1),
        *exchange(2),
    ]
    view = ContextWindow(cut=3, anchor=2).view(session)
    assert texts(view[0])[-1] == "[The message this turn answers:]\nthe question"


def test_an_anchor_still_in_view_or_out_of_range_adds_nothing() -> None:
    session = [
        said("user", "earlier"),
        said("assistant", "ok"),
        said("user", "the question"),
        *exchange(1),
        *exchange(2),
    ]
    assert len(ContextWindow(cut=1, anchor=2).view(session)[0].content) == 2
    assert len(ContextWindow(cut=3, anchor=99).view(session)[0].content) == 2


def test_the_estimate_is_the_json_length_over_chars_per_token() -> None:
    length = sum(len(message.model_dump_json()) for message in CONVERSATION)
    assert estimate_tokens(CONVERSATION) == length // CHARS_PER_TOKEN
    assert estimate_tokens([]) == 0


def test_before_the_first_call_the_overhead_is_the_system_prompt_s_estimate() -> None:
    window = ContextWindow()
    system = "s" * (10 * CHARS_PER_TOKEN)
    assert counted_input(window, CONVERSATION, system) == 10 + estimate_tokens(CONVERSATION)


def test_after_a_call_the_overhead_is_what_the_provider_counted_beyond_the_estimate() -> None:
    window = ContextWindow(cut=2)
    window.measured(counted_input_tokens=500, sent_estimate=120)
    assert window.overhead_tokens == 380
    view = window.view(CONVERSATION)
    assert counted_input(window, CONVERSATION, "ignored now") == 380 + estimate_tokens(view)


def test_a_provider_count_below_the_estimate_is_no_negative_overhead() -> None:
    window = ContextWindow()
    window.measured(counted_input_tokens=50, sent_estimate=120)
    assert window.overhead_tokens == 0


def test_cuts_land_on_whole_exchanges_and_keep_the_first_and_the_last() -> None:
    first = Message(role="user", content=[TextBlock(text="task")])
    messages = [first, *exchange(1), *exchange(2), *exchange(3)]

    assert cuts(messages, ContextWindow()) == [2, 4]
    assert cuts(messages, ContextWindow(cut=2)) == [4]
    view = ContextWindow(cut=4).view(messages)
    assert view[0].content[0] == TextBlock(text="task")
    assert [m.role for m in view] == ["user", "assistant", "user"]
    assert view[1].content == messages[5].content
    assert cuts([first, *exchange(1)], ContextWindow()) == []


def _image(name: str, size: int) -> ImageBlock:
    source = StoredSource(ref="sha256:" + "A" * 43, media_type="image/png", size=size)
    return ImageBlock(source=source, name=name)


def test_images_left_out_are_named_in_the_note_and_counted_by_their_own_rule() -> None:
    shot = _image("dashboard.png", 40 * 1024)
    result = ToolResultBlock(tool_use_id="t1", content=[TextBlock(text="seen"), shot])
    conversation = [
        said("user", "task"),
        exchange(1)[0],
        Message(role="user", content=[result]),
        *exchange(2),
    ]

    [first, *_] = ContextWindow(cut=2).view(conversation)

    assert texts(first)[-1] == (
        "[Left out with them: image dashboard.png · image/png · 40.0 KiB · sha256:" + "A" * 43 + "]"
    )
    assert all("Left out with" not in t for t in texts(ContextWindow(cut=2).view(CONVERSATION)[0]))
    # An image bills about 1,600 tokens whatever the length of its reference.
    assert estimate_tokens([Message(role="user", content=[shot])]) >= 1_600
