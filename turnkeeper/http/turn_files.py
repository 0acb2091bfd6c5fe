"""`GET /v1/turns/{id}/attachments/{digest}` and `GET /v1/turns/{id}/sandbox?path=`: a turn's
files over HTTP, as `turnkeeper attachment get` and `turnkeeper sandbox get` read them
(`turnkeeper.client.turn_files`), for a client that cannot run the command line.

Owned like the turn: whoever may see it may read its files; to anyone else they do not exist (the
same 404 as a missing turn). The bytes are the caller's or a tool's, never ours, so they are sent
as a download that a browser does not render in the API's origin (and, as every answer behind
`turnkeeper.http.edge`, with `nosniff`).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import FastAPI, Query
from fastapi.responses import Response
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from turnkeeper.client import turn_files
from turnkeeper.client.client import turn
from turnkeeper.http.access import visible_turn
from turnkeeper.http.app import Caller
from turnkeeper.http.errors import ApiError, rpc_error
from turnkeeper.http.turns import TurnService

# A file path of a sandbox folder: the same bound as a request's other paths.
_MAX_PATH = 1024


def add_turn_files(app: FastAPI, turns: TurnService) -> None:
    """The file routes; added before `GET /v1/turns/{id}`, whose `path` id would take them in."""

    @app.get(
        "/v1/turns/{workflow_id:path}/attachments/{digest}",
        response_class=Response,
        responses={200: {"content": {"application/octet-stream": {}}}},
    )
    async def attachment(workflow_id: str, digest: str, identity: Caller) -> Response:
        """An image or document of the turn, by the digest its transcript names (`sha256:…`,
        or the part after `sha256:`), with its media type."""
        await visible_turn(turns, workflow_id, identity)
        try:
            transcript = await turn(turns.client, workflow_id).transcript()
            found = await turn_files.attachment(turns.client, workflow_id, transcript, digest)
        except turn_files.TurnFileMissing as missing:
            raise ApiError(404, str(missing)) from None
        except WorkflowQueryFailedError as err:
            raise ApiError(502, f"the turn's transcript could not be read: {err}") from None
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None
        return _download(found)

    @app.get(
        "/v1/turns/{workflow_id:path}/sandbox",
        response_class=Response,
        responses={200: {"content": {"application/octet-stream": {}}}},
    )
    async def sandbox_file(
        workflow_id: str,
        path: Annotated[str, Query(min_length=1, max_length=_MAX_PATH)],
        identity: Caller,
    ) -> Response:
        """One file of the turn's sandbox folder, as its last `run_python` or `run_shell` call
        left it (`path` relative to the folder); 409 while the turn runs."""
        await visible_turn(turns, workflow_id, identity)
        try:
            found = await turn_files.sandbox_file(turns.client, workflow_id, path)
        except turn_files.TurnStillRunning as running:
            raise ApiError(409, str(running)) from None
        except turn_files.TurnFileMissing as missing:
            raise ApiError(404, str(missing)) from None
        except RPCError as err:
            raise rpc_error(err, workflow_id) from None
        return _download(found)


def _download(found: turn_files.TurnFile) -> Response:
    name = found.name or "file"
    return Response(
        found.data,
        media_type=found.media_type,
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, no-store",
        },
    )
