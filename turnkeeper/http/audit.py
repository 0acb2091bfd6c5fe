"""The audit line of `turnkeeper serve`: one structlog event, `api_call`, for every request that
changes something (every `POST`, `PUT`, `PATCH` and `DELETE` under `/v1/`), refusals included,
with who asked, what, on which turn, tenant or schedule, and the status of the answer.

Never a token and never content: no body, no message, no input, no reason. What was done with
the content is in the turn's own history.
"""

from __future__ import annotations

import logging
from typing import Final

from starlette.requests import Request

from turnkeeper.ground.logs import get_logger
from turnkeeper.http.tokens import Identity

AUDIT_EVENT: Final = "api_call"
STATE_CHANGING: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# The actions by route, as the audit line names them; any other state-changing call is named
# by its method and path template (its path, for a call refused at sign-in).
ACTIONS: Final[dict[tuple[str, str], str]] = {
    ("POST", "/v1/turns"): "start",
    ("POST", "/v1/turns/{workflow_id}/decisions"): "decide",
    ("POST", "/v1/turns/{workflow_id}/steer"): "steer",
    ("POST", "/v1/turns/{workflow_id}/interrupt"): "interrupt",
    ("POST", "/v1/turns/{workflow_id}/cancel"): "cancel",
    ("PUT", "/v1/tenants/{name}"): "set_tenant_caps",
    ("POST", "/v1/schedules"): "schedule_create",
    ("DELETE", "/v1/schedules/{schedule}"): "schedule_delete",
    ("POST", "/v1/schedules/{schedule}/pause"): "schedule_pause",
    ("POST", "/v1/schedules/{schedule}/resume"): "schedule_resume",
    ("POST", "/v1/schedules/{schedule}/trigger"): "schedule_trigger",
}

log = get_logger(__name__)


def always_audited() -> None:
    """The audit line is written whatever `--log-level` the console was given (its default,
    WARNING, would hide an INFO line): the audit logger keeps INFO unless set otherwise."""
    audit_logger = logging.getLogger(__name__)
    if audit_logger.level == logging.NOTSET:
        audit_logger.setLevel(logging.INFO)


def record(request: Request, identity: Identity | None, status: int) -> None:
    """Logs `request`'s audit line when it is a state-changing call, answered with `status`
    (`identity` None: the caller did not sign in)."""
    if request.method not in STATE_CHANGING or not request.url.path.startswith("/v1/"):
        return
    route = request.scope.get("route")
    # Without converters (`{workflow_id:path}` is `{workflow_id}`): the route as documented.
    template = getattr(route, "path_format", None)
    params: dict[str, str] = request.scope.get("path_params") or {}
    action = ACTIONS.get((request.method, template or ""))
    line(
        identity,
        # Before sign-in nothing is routed yet: the path stands for the route.
        action or f"{request.method} {template or request.url.path}",
        # A started turn's id is known only once the endpoint chose it.
        params.get("workflow_id") or getattr(request.state, "turn", None),
        status,
        tenant=params.get("name"),
        schedule=params.get("schedule") or getattr(request.state, "schedule", None),
    )


def line(
    identity: Identity | None,
    action: str,
    turn: str | None,
    status: int,
    *,
    tenant: str | None = None,
    schedule: str | None = None,
) -> None:
    """Logs one audit line: also of the calls that change something through another door than
    a `/v1/` route (the MCP endpoint's, `mcp:start` and `mcp:interrupt`, with the HTTP status
    the same call would have been answered with)."""
    log.info(
        AUDIT_EVENT,
        identity=identity.name if identity else None,
        role=identity.role if identity else None,
        action=action,
        turn=turn,
        tenant=tenant,
        status=status,
        # Only on the lines of `/v1/schedules`: the others stay as they were.
        **({"schedule": schedule} if schedule is not None else {}),
    )
