"""What of its transcript a compacting turn sends to the model, and how big that is. Pure and
deterministic: the turn's state holds a `ContextWindow`, the transcript itself is never changed.

The view is the first message (with a note or a summary of what was left out) followed by the
transcript from message `1 + cut` on; `cut` only ever lands on an assistant message, so the view
keeps whole exchanges and every `tool_use` keeps its `tool_result`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from turnkeeper.contracts.attachments import (
        StoredSource,
        attachment_blocks,
        attachment_tokens,
    )
    from turnkeeper.contracts.compaction import CHARS_PER_TOKEN
    from turnkeeper.contracts.messages import Message, TextBlock


class ContextWindow(BaseModel):
    cut: int = 0  # messages after the first that the model no longer sees
    summary: str | None = None  # of those messages, with the summarize strategy
    compactions: int = 0
    # The last call's input as the provider counted it, beyond our estimate of its messages:
    # the system prompt and the tool definitions. None before the first call.
    overhead_tokens: int | None = None
    # The message that opened this turn, when the turn continues an earlier conversation (its
    # index there): left out, its text still goes along with the first message, so a session's
    # long turn never loses the question it answers.
    anchor: int = 0

    def view(self, messages: Sequence[Message]) -> list[Message]:
        """The messages a model call sends."""
        if self.cut == 0 or not messages:
            return list(messages)
        first = messages[0]
        notes = [TextBlock(text=self.note())]
        if 0 < self.anchor <= self.cut and self.anchor < len(messages):
            asked = [b.text for b in messages[self.anchor].content if isinstance(b, TextBlock)]
            if asked:
                notes.append(
                    TextBlock(text="[The message this turn answers:]\n" + "\n".join(asked))
                )
        left_out = list(attachment_blocks(messages[1 : 1 + self.cut]))
        if left_out:
            # Never dropped unsaid: the model learns which images and documents it no longer
            # sees, and by which name, so it can ask for them again (read_file, the user).
            listed = "; ".join(f"{block.type} {block.summary()}" for block in left_out)
            notes.append(TextBlock(text=f"[Left out with them: {listed}]"))
        first = Message(role=first.role, content=[*first.content, *notes])
        return [first, *messages[1 + self.cut :]]

    def note(self) -> str:
        """What the model reads in place of the messages left out."""
        if self.summary is None:
            return (
                f"[{self.cut} earlier messages of this conversation were left out to fit the "
                "context window.]"
            )
        return (
            f"[Summary of {self.cut} earlier messages of this conversation, left out to fit the "
            f"context window:]\n{self.summary}"
        )

    def measured(self, counted_input_tokens: int, sent_estimate: int) -> None:
        """Keeps what the provider's count of a call's input says beyond our estimate."""
        self.overhead_tokens = max(0, counted_input_tokens - sent_estimate)


def estimate_tokens(messages: Sequence[Message]) -> int:
    """Characters over four of the messages' JSON (ADR 0009's heuristic). Counting the JSON
    punctuation too leans high, the safe side for staying under a limit."""
    chars = sum(len(message.model_dump_json()) for message in messages)
    # An image or document bills by its own rule, not by the length of its reference.
    attached = sum(
        attachment_tokens(block.source.media_type, block.source.size)
        for block in attachment_blocks(messages)
        if isinstance(block.source, StoredSource)
    )
    return chars // CHARS_PER_TOKEN + attached


def counted_input(window: ContextWindow, messages: Sequence[Message], system_prompt: str) -> int:
    """The input tokens the next call will send: the provider's count of the last call's fixed
    part (or the system prompt's estimate before the first), plus our estimate of the view."""
    overhead = window.overhead_tokens
    if overhead is None:
        overhead = len(system_prompt) // CHARS_PER_TOKEN
    return overhead + estimate_tokens(window.view(messages))


def cuts(messages: Sequence[Message], window: ContextWindow) -> list[int]:
    """Every cut that leaves out more than `window` does, in whole exchanges: each lands on an
    assistant message, and the last exchange (the one the next call answers) always stays."""
    assistants = [i for i, message in enumerate(messages) if i > 0 and message.role == "assistant"]
    if not assistants:
        return []
    last = assistants[-1]
    return [i - 1 for i in assistants if window.cut < i - 1 and i <= last and i > 1]
