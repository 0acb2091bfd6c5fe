"""How the HTTP API refuses: `ApiError` carries the HTTP status the app answers with, and a turn
that does not exist is said in one way only (`no_turn`), also for a turn the caller may not see."""

from __future__ import annotations

from starlette.responses import JSONResponse
from temporalio.service import RPCError, RPCStatusCode


class ApiError(Exception):
    """A request the API refuses: `status` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s


def no_turn(workflow_id: str) -> ApiError:
    """The answer for a turn that does not exist, and for one the caller may not see: the same
    status and words, so that which ids exist does not leak."""
    return ApiError(404, f"no turn {workflow_id!r}")


def rpc_error(err: RPCError, workflow_id: str) -> ApiError:
    """What Temporal's refusal of a request about `workflow_id` answers over HTTP."""
    if err.status == RPCStatusCode.NOT_FOUND:
        return no_turn(workflow_id)
    return ApiError(502, f"Temporal refused the request for {workflow_id!r}: {err.message}")


def refusal(error: ApiError) -> JSONResponse:
    """The answer to a refused request: its status, `{"detail": …}`, and the headers that go
    with it (how to sign in, when to retry)."""
    headers = {}
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(error.retry_after_s)
    return JSONResponse({"detail": error.message}, error.status, headers=headers)
