"""The `write_preview` activity: the difference a `write_file` call would make to the
workspace, computed on the worker (where the file is) before the call waits for approval.

It only reads. A file it cannot read as text, or a path the workspace refuses, becomes a
`problem` for the approver to see, never a failure: the approval is asked for either way.
"""

from __future__ import annotations

import asyncio
import difflib

from temporalio import activity
from turnkeeper.activities.tools.registry import ToolError
from turnkeeper.activities.tools.workspace import Workspace
from turnkeeper.contracts.names import ACTIVITY_WRITE_PREVIEW
from turnkeeper.contracts.write_preview import MAX_PREVIEW_CHARS, WritePreview, WritePreviewInput

# A file larger than this is not diffed (difflib is quadratic in the worst case).
MAX_DIFFED_BYTES = 1024 * 1024


class WritePreviews:
    """`write_preview` over one worker's workspace; register it with the worker."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    @activity.defn(name=ACTIVITY_WRITE_PREVIEW)
    async def write_preview(self, call: WritePreviewInput) -> WritePreview:
        """The diff from the file now to `call.content`."""
        return await asyncio.to_thread(self.preview, call)

    def preview(self, call: WritePreviewInput) -> WritePreview:
        try:
            real = self._workspace.resolve(call.path)
            exists = real.is_file()
            if exists and real.stat().st_size > MAX_DIFFED_BYTES:
                problem = f"the file is over {MAX_DIFFED_BYTES} bytes; no diff is shown"
                return WritePreview(path=call.path, exists=True, problem=problem)
            now = self._workspace.read_text(call.path, MAX_DIFFED_BYTES) if exists else ""
        except ToolError as err:
            return WritePreview(path=call.path, problem=str(err))
        lines = difflib.unified_diff(
            now.splitlines(),
            call.content.splitlines(),
            fromfile=f"{call.path} (now)" if exists else "/dev/null",
            tofile=f"{call.path} (after the write)",
            lineterm="",
        )
        diff = "\n".join(lines)
        truncated = len(diff) > MAX_PREVIEW_CHARS
        return WritePreview(
            path=call.path, exists=exists, diff=diff[:MAX_PREVIEW_CHARS], truncated=truncated
        )
