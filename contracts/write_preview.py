"""What an approver sees of a `write_file` call before deciding it: the difference between the
file as it is in the worker's workspace and the content the call would write.

The turn asks for it (activity `write_preview`) on the worker, where the file lives, just before
the call starts waiting; the approval's `PendingCall.preview` carries it to the status query,
the API's `GET /v1/approvals` and the inbox.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field
from turnkeeper.contracts.contract_model import ContractModel

# The diff is cut at this many characters (with `truncated` set): it travels in the status
# query's answer and in every signal that relays a sub-agent's waiting calls, far below the
# content store's threshold, so it never needs one of its own.
MAX_PREVIEW_CHARS: Final = 32 * 1024
# The turn's last words before a call (`PendingCall.said`) keep this many characters, the end.
MAX_SAID_CHARS: Final = 2000


class WritePreviewInput(ContractModel):
    """The `write_preview` activity's input: the call's arguments."""

    path: str
    """The file the call would write, relative to the workspace."""
    content: str
    """The text it would write."""


class WritePreview(ContractModel):
    """The `write_preview` activity's result (`PendingCall.preview`)."""

    path: str
    """The file, as the call names it."""
    exists: bool = False
    """Whether the file exists now (False: the call creates it; the diff adds every line)."""
    diff: str = ""
    """A unified diff from the file now to the call's content (`---` now, `+++` after)."""
    truncated: bool = False
    """The diff was longer than `MAX_PREVIEW_CHARS` and was cut there."""
    problem: str | None = Field(default=None)
    """Why there is no diff (the path leads outside the workspace, the file is not text…)."""
