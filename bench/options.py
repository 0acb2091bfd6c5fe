"""The worker knobs of our side, as command-line flags shared by `bench.run` and
`bench.parked_worker` (which gets the same flags verbatim)."""

from __future__ import annotations

import argparse
from typing import Any

from temporalio.worker import PollerBehaviorSimpleMaximum, UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

_FLAGS = (
    "max_concurrent_workflow_tasks",
    "max_concurrent_activities",
    "max_cached_workflows",
    "workflow_task_pollers",
    "activity_task_pollers",
)


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "worker options of our side (default: turnkeeper's, see turnkeeper/worker/worker_tuning.py)"
    )
    group.add_argument("--max-concurrent-workflow-tasks", type=int)
    group.add_argument("--max-concurrent-activities", type=int)
    group.add_argument("--max-cached-workflows", type=int)
    group.add_argument("--workflow-task-pollers", type=int, help="simple maximum of WFT polls")
    group.add_argument("--activity-task-pollers", type=int, help="simple maximum of AT polls")
    group.add_argument("--disable-eager-activities", action="store_true")
    group.add_argument(
        "--local-tool",
        action="store_true",
        help="run our side's fetch_blob on the fast path for cheap tools (a local activity)",
    )
    group.add_argument(
        "--encrypt",
        action="store_true",
        help="encrypt our side's payloads and content store (TURNKEEPER_ENCRYPTION_KEYS)",
    )
    group.add_argument(
        "--unsandboxed", action="store_true", help="run our workflow without the sandbox"
    )
    group.add_argument(
        "--passthrough",
        help="comma-separated modules the sandbox imports once instead of per workflow run "
        "(e.g. workflows)",
    )


def worker_argv(args: argparse.Namespace) -> list[str]:
    """The flags that produced `args`, to hand to a worker subprocess."""
    argv: list[str] = []
    for name in _FLAGS:
        value = getattr(args, name)
        if value is not None:
            argv += ["--" + name.replace("_", "-"), str(value)]
    if args.disable_eager_activities:
        argv.append("--disable-eager-activities")
    if args.local_tool:
        argv.append("--local-tool")
    if args.encrypt:
        argv.append("--encrypt")
    if args.unsandboxed:
        argv.append("--unsandboxed")
    if args.passthrough:
        argv += ["--passthrough", args.passthrough]
    return argv


def worker_options(args: argparse.Namespace) -> dict[str, Any]:
    """`Worker` keyword arguments for the flags that were given."""
    options: dict[str, Any] = {}
    for name in ("max_concurrent_workflow_tasks", "max_concurrent_activities"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.max_cached_workflows is not None:
        options["max_cached_workflows"] = args.max_cached_workflows
    if args.workflow_task_pollers is not None:
        options["workflow_task_poller_behavior"] = PollerBehaviorSimpleMaximum(
            args.workflow_task_pollers
        )
    if args.activity_task_pollers is not None:
        options["activity_task_poller_behavior"] = PollerBehaviorSimpleMaximum(
            args.activity_task_pollers
        )
    if args.disable_eager_activities:
        options["disable_eager_activity_execution"] = True
    if args.unsandboxed:
        options["workflow_runner"] = UnsandboxedWorkflowRunner()
    elif args.passthrough:
        modules = [name for name in args.passthrough.split(",") if name]
        restrictions = SandboxRestrictions.default.with_passthrough_modules(*modules)
        options["workflow_runner"] = SandboxedWorkflowRunner(restrictions=restrictions)
    return options


def describe(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs as given, for the report (None: turnkeeper's default)."""
    described: dict[str, Any] = {name: getattr(args, name) for name in _FLAGS}
    described["disable_eager_activities"] = args.disable_eager_activities
    described["local_tool"] = args.local_tool
    described["encrypt"] = args.encrypt
    described["unsandboxed"] = args.unsandboxed
    described["passthrough"] = args.passthrough
    return described
