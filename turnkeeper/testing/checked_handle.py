"""`CheckedTurnHandle`: the `TurnHandle` of a turn a `TurnTestEnvironment` started, which
reports a script's mismatch as the `ScriptError`, and a handle used after the environment closed
as `EnvironmentStopped` at once.

Measured on the dev server without the worker: a query (`status`, `transcript`, `decisions`, and
those behind `events` and `wait_for_approval`) fails after about 30 s with `RPCError: no poller
seen`; an update to a running turn (`approve`, `reject`, `extend_budget`, `steer`, `interrupt`, a
signed `cancel`) never returns, while an ended turn refuses it at once; a signal (`submit`) or
Temporal's cancellation is accepted with nothing left to act on it. Only the report of a turn that
ended is read from its history, without a worker. Hence one rule a test can keep: everything but
`result()` and `output()` inside the `async with`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import JsonValue
from temporalio.client import WorkflowExecutionStatus

from turnkeeper.client.client import DEFAULT_SIGNATURE_LIFETIME, Result, TurnHandle
from turnkeeper.contracts.events import TurnEvent
from turnkeeper.contracts.messages import Message
from turnkeeper.contracts.signals import DecisionRecord, PendingCall, TurnStatus
from turnkeeper.contracts.turn import AgentReport
from turnkeeper.testing.script import ScriptError
from turnkeeper.testing.scripted_model import ScriptedModel

if TYPE_CHECKING:
    from turnkeeper.testing.environment import TurnTestEnvironment

WORKER_ONLY: Final = (
    "every handle method but result() and output() (of a turn that ended inside it) needs the "
    "environment's running worker: call status(), transcript(), decisions(), events(), "
    "wait_for_approval(), approve(), reject(), extend_budget(), steer(), interrupt(), submit() "
    "and cancel() inside the `async with`"
)


class EnvironmentStopped(RuntimeError):
    """A `CheckedTurnHandle` was used for something its environment's worker (or server) would
    have answered, after the environment stopped it: its `async with` ended. The message says
    which handle methods need a running worker."""


class CheckedTurnHandle(TurnHandle):
    """The `TurnHandle` of a turn started by a test environment: where a `ScriptedModel` met a
    mismatch, waiting on the turn raises that `ScriptError` instead of the turn's failure; once
    the environment's worker has stopped, every method but `result()` and `output()` raises
    `EnvironmentStopped` at once instead of waiting for a worker that will not come."""

    def __init__(self, handle: TurnHandle, environment: TurnTestEnvironment) -> None:
        super().__init__(handle.client, handle.workflow, handle.output_type)
        self._environment = environment
        self._models = environment.models

    async def result(self) -> AgentReport:
        __tracebackhide__ = True
        if not self._environment.worker_running:
            await self._check_ended()
        try:
            return await super().result()
        except Exception:
            raise_script_errors(self._models)
            raise

    async def wait_for_approval(
        self,
        # The contract names it `timeout`; it bounds a polling loop, not one await.
        timeout: float | timedelta = 30.0,  # noqa: ASYNC109
        *,
        tool: str | None = None,
    ) -> PendingCall:
        self._require_worker()
        try:
            return await super().wait_for_approval(timeout, tool=tool)
        except Exception:
            raise_script_errors(self._models)
            raise

    async def status(self) -> TurnStatus:
        self._require_worker()
        return await super().status()

    async def transcript(self) -> list[Message]:
        self._require_worker()
        return await super().transcript()

    async def decisions(self) -> list[DecisionRecord]:
        self._require_worker()
        return await super().decisions()

    def events(self) -> AsyncIterator[TurnEvent]:
        self._require_worker()
        return super().events()

    async def submit(self, call_id: str, output: JsonValue, *, is_error: bool = False) -> None:
        self._require_worker()
        await super().submit(call_id, output, is_error=is_error)

    async def cancel(
        self,
        reason: str = "",
        *,
        author: str | None = None,
        key: Ed25519PrivateKey | None = None,
        expires_in: timedelta = DEFAULT_SIGNATURE_LIFETIME,
    ) -> None:
        self._require_worker()
        await super().cancel(reason, author=author, key=key, expires_in=expires_in)

    async def _update(
        self, name: str, payload: dict[str, Any], result_type: type[Result]
    ) -> Result:
        # Every decision and intervention (approve … interrupt, a signed cancel) passes here.
        self._require_worker()
        return await super()._update(name, payload, result_type)

    def _require_worker(self) -> None:
        __tracebackhide__ = True
        if not self._environment.worker_running:
            raise self._stopped()

    async def _check_ended(self) -> None:
        """Refuses to wait for a report that cannot come: the server went with the environment,
        or the turn was still running when the worker stopped."""
        __tracebackhide__ = True
        if not self._environment.server_running:
            raise self._stopped()
        description = await self.workflow.describe()
        if description.status == WorkflowExecutionStatus.RUNNING:
            raise EnvironmentStopped(
                f"turn {self.id} was still running when the environment's worker stopped, so "
                f"it will not end: wait for result() inside the `async with`; {WORKER_ONLY}"
            )

    def _stopped(self) -> EnvironmentStopped:
        if self._environment.server_running:
            return EnvironmentStopped(
                f"turn {self.id}: the environment's worker has stopped (its `async with` "
                f"ended); {WORKER_ONLY}"
            )
        return EnvironmentStopped(
            f"turn {self.id}: the environment's worker has stopped, and so has the server it "
            "started (its `async with` ended): no handle method works any more, result() "
            "included; call them inside the `async with`"
        )


def raise_script_errors(models: Sequence[ScriptedModel]) -> None:
    """Raises the first ScriptError any of `models` met (then forgets it), if one did."""
    __tracebackhide__ = True  # pytest shows the test's line and the message, not the kit's code
    for model in models:
        if model.errors:
            message = str(model.errors[0])
            model.errors.clear()
            # A fresh error without the chain: the activity's traceback and the turn's failure
            # say the same thing less readably.
            raise ScriptError(message) from None
