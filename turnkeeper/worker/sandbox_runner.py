"""The workflow sandbox, entered once per activation instead of three times per payload.

Temporal's `SandboxedWorkflowRunner` enters a run's sandbox (install the run's `sys.modules`,
`__import__` and restricted builtins, `exec` a two-line snippet, restore them) for every
activation, and also twice for every payload the worker converts: to ask the run's workflow
instance for the payload's serialization context and for its external-storage context. Those two
questions are lookups in the instance's pending commands that import nothing and run no workflow
code, yet py-spy put their sandbox entries at 23 % of our worker's CPU in a run of 200
concurrent turns (a turn converts more payloads than a bare workflow: stream events, summaries,
search attributes). So this runner asks the instance directly for the two contexts, and compiles
the snippets it still `exec`s (activations, run creation) once per process instead of per call
(about 22 µs each here).

Hand-written because the SDK has no option for either: the class it instantiates per run is
private (`workflow_sandbox._runner._Instance`), so `tests/unit/worker/test_sandbox_runner.py`
pins the seam this depends on and fails loudly if an SDK upgrade moves it. Workflow code still
runs only inside the sandbox; the replay and workflow tests run through this runner.
"""

from __future__ import annotations

from functools import lru_cache
from types import CodeType
from typing import TYPE_CHECKING, Any, Final

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox._runner import _Instance

if TYPE_CHECKING:
    from temporalio.converter import SerializationContext
    from temporalio.converter._extstore import StorageDriverStoreContext
    from temporalio.worker._command_aware_visitor import CommandInfo
    from temporalio.worker.workflow_sandbox._in_sandbox import InSandbox

# The name under which the SDK keeps a run's in-sandbox object in the run's globals.
IN_SANDBOX_GLOBAL: Final = "__temporal_in_sandbox"
# The SDK runs fewer than ten distinct snippets; the bound only guards against a future SDK that
# would build them per call (then this cache would miss, and cost what the SDK costs today).
_SNIPPETS: Final = 64


@lru_cache(maxsize=_SNIPPETS)
def compiled_snippet(source: str) -> CodeType:
    """`source` compiled for `exec`, once per process."""
    return compile(source, "<temporal workflow sandbox>", "exec")


class _DirectContextInstance(_Instance):
    """One run's sandbox. `_run_code` is the one place the SDK execs a snippet; the two context
    questions go straight to the run's in-sandbox object, which the SDK created at `__init__`."""

    def _run_code(self, code: str, **extra_globals: Any) -> None:  # type: ignore[override]
        super()._run_code(compiled_snippet(code), **extra_globals)  # type: ignore[arg-type]

    def _in_sandbox(self) -> InSandbox:
        return self.globals_and_locals[IN_SANDBOX_GLOBAL]  # type: ignore[return-value]

    def get_serialization_context(
        self, command_info: CommandInfo | None
    ) -> SerializationContext | None:
        return self._in_sandbox().get_serialization_context(command_info)

    def get_external_store_context(
        self, command_info: CommandInfo | None
    ) -> StorageDriverStoreContext:
        return self._in_sandbox().get_external_store_context(command_info)


class DirectContextSandboxRunner(SandboxedWorkflowRunner):
    """`SandboxedWorkflowRunner` with the same restrictions and runner class, whose runs answer
    payload-context questions without entering the sandbox and exec precompiled snippets."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _DirectContextInstance(det, self.runner_class, self.restrictions)
