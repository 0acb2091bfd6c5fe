"""`turnkeeper deploy status|promote|ramp|rollback`: a Worker Deployment's routing, from the
terminal. The work is `turnkeeper.devtools.deployments`; this module connects, prints, and turns the
server's refusals into a sentence."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from turnkeeper.client.connection import connect
from turnkeeper.console.terminal import CommandError, out
from turnkeeper.devtools import deployments
from turnkeeper.worker.versioning import DEPLOYMENT_NAME_ENV

T = TypeVar("T")


def deployment_name(given: str | None) -> str:
    name = given or os.environ.get(DEPLOYMENT_NAME_ENV)
    if not name:
        raise CommandError(f"name the deployment: --deployment or {DEPLOYMENT_NAME_ENV}", 2)
    return name


async def show_status(address: str | None, namespace: str | None, name: str, as_json: bool) -> int:
    status = await _call(address, namespace, lambda c: deployments.status(c, name))
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "deployment": status.name,
                    "current": status.current_build_id,
                    "ramping": status.ramping_build_id,
                    "ramp_percent": status.ramp_percent,
                    "versions": [v.__dict__ for v in status.versions],
                }
            )
        )
        return 0
    current = status.current_build_id or "unversioned workers"
    out.print(f"deployment {status.name}: current {current}", soft_wrap=True)
    if status.ramping_build_id:
        out.print(f"  ramping {status.ramping_build_id} at {status.ramp_percent:g} %")
    for version in status.versions:
        out.print(f"  {version.build_id}: {version.status}")
    return 0


async def promote(address: str | None, namespace: str | None, name: str, build_id: str) -> int:
    previous = await _call(address, namespace, lambda c: deployments.promote(c, name, build_id))
    out.print(f"{build_id} is current (was {previous or 'unversioned'}); pinned turns stay put")
    return 0


async def ramp(
    address: str | None, namespace: str | None, name: str, build_id: str | None, percent: float
) -> int:
    if percent > 0 and not build_id:
        raise CommandError("a ramp needs the version to ramp: --build-id", 2)
    await _call(address, namespace, lambda c: deployments.ramp(c, name, build_id or "", percent))
    if percent == 0:
        out.print("ramp ended: every new turn goes to the current version")
    else:
        out.print(f"{build_id} takes {percent:g} % of new turns")
    return 0


async def rollback(
    address: str | None, namespace: str | None, name: str, build_id: str | None
) -> int:
    now = await _call(address, namespace, lambda c: deployments.rollback(c, name, build_id))
    out.print(f"{now} is current again; turns pinned to the replaced version finish there")
    return 0


async def _call(
    address: str | None, namespace: str | None, action: Callable[[Client], Awaitable[T]]
) -> T:
    client = await connect(address=address, namespace=namespace)
    try:
        return await action(client)
    except deployments.DeploymentError as error:
        raise CommandError(str(error)) from None
    except RPCError as error:
        hint = ""
        if error.status == RPCStatusCode.NOT_FOUND:
            hint = " (no worker of that deployment or version has polled yet)"
        elif error.status == RPCStatusCode.FAILED_PRECONDITION:
            hint = " (start that version's workers first)"
        raise CommandError(f"Temporal refused: {error.message}{hint}") from None
