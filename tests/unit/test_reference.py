"""docs/reference.md and the code name the same things, in both directions.

The reference marks each table it lists names in with an HTML comment (invisible once rendered):
`<!-- fields: ModelName -->` for a pydantic model's fields, `<!-- handlers: WorkflowType -->`
for a workflow's signals, updates and queries, `<!-- names: KIND -->` for the other lists. Each
table is compared with what the code defines, so a field, a command or a variable added to one
and not the other fails here, naming it.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import temporalio.bridge
import typer.main
from pydantic import BaseModel, TypeAdapter
from temporalio import workflow
from turnkeeper.activities.mcp.config import HttpServerConfig, StdioServerConfig
from turnkeeper.activities.providers.endpoints import Endpoint
from turnkeeper.activities.tools.workspace import Workspace, builtin_tools
from turnkeeper.contracts import approvals, errors, mcp, names
from turnkeeper.contracts.approvals import (
    ApprovalCacheInput,
    LookupInput,
    LookupResult,
    RememberInput,
    RevokeInput,
)
from turnkeeper.contracts.budget_extension import ExtendBudgetInput, ExtendBudgetResult
from turnkeeper.contracts.events import EventKind, TurnEvent
from turnkeeper.contracts.rate_limits import (
    AcquireInput,
    AcquireResult,
    BackOffInput,
    RateLimiterInput,
    SettleTokensInput,
)
from turnkeeper.contracts.session import (
    CloseInput,
    SendInput,
    SendResult,
    SessionRequest,
    SessionStatus,
    TurnStateNote,
)
from turnkeeper.contracts.signals import (
    ApproveInput,
    DecideResult,
    SubagentPending,
    SubmitToolResultInput,
    TurnStatus,
)
from turnkeeper.contracts.steering import (
    CancelInput,
    CancelResult,
    InterruptInput,
    InterruptResult,
    SteerInput,
    SteerResult,
)
from turnkeeper.contracts.tenants import (
    TENANT_CAP_REACHED,
    ReserveInput,
    ReserveResult,
    SetCapsInput,
    SettleInput,
    TenantSpend,
)
from turnkeeper.contracts.turn import AgentReport, TurnRequest
from turnkeeper.contracts.waits import AgentEvent
from turnkeeper.workflows.agent_turn_workflow import AgentTurnWorkflow
from turnkeeper.workflows.approvals.approval_cache_workflow import ApprovalCacheWorkflow
from turnkeeper.workflows.fleet.rate_limiter_workflow import RateLimiterWorkflow
from turnkeeper.workflows.fleet.tenant_ledger_workflow import TenantLedgerWorkflow
from turnkeeper.workflows.sessions.agent_session_workflow import AgentSessionWorkflow

import turnkeeper
from turnkeeper.console import worker_cli
from turnkeeper.console.cli import app

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
CODE = ("turnkeeper", "contracts", "workflows", "activities", "worker.py")

# What crosses the boundary: the request and report, every payload and answer of a signal,
# update or query, the event, and the worker's JSON configuration. Nested models are found from
# these, so a model added inside one (a new field's type) needs a table too.
BOUNDARY_MODELS: tuple[type[BaseModel], ...] = (
    TurnRequest,
    AgentReport,
    TurnStatus,
    ApproveInput,
    DecideResult,
    SubmitToolResultInput,
    ExtendBudgetInput,
    ExtendBudgetResult,
    SteerInput,
    SteerResult,
    InterruptInput,
    InterruptResult,
    CancelInput,
    CancelResult,
    SessionRequest,
    SendInput,
    SendResult,
    CloseInput,
    SessionStatus,
    TurnStateNote,
    SubagentPending,
    ApprovalCacheInput,
    RememberInput,
    RevokeInput,
    LookupInput,
    LookupResult,
    TurnEvent,
    AgentEvent,
    Endpoint,
    StdioServerConfig,
    HttpServerConfig,
    SetCapsInput,
    ReserveInput,
    ReserveResult,
    SettleInput,
    TenantSpend,
    RateLimiterInput,
    AcquireInput,
    AcquireResult,
    SettleTokensInput,
    BackOffInput,
)
# Fields the code fills in itself, which a user never writes: an MCP server's name is its key.
NOT_WRITTEN = {"StdioServerConfig": {"name"}, "HttpServerConfig": {"name"}}
WORKFLOWS = (
    AgentTurnWorkflow,
    AgentSessionWorkflow,
    ApprovalCacheWorkflow,
    TenantLedgerWorkflow,
    RateLimiterWorkflow,
)
# Options every turn command takes, documented once above the command table.
CONNECTION_OPTIONS = {"--address", "--namespace", "--ui-url"}
ENV_PREFIXES = ("TURNKEEPER_", "AGENT_", "TEMPORAL_", "OTEL_", "OPENAI_", "ANTHROPIC_")


def _tables(kind: str) -> dict[str, list[list[str]]]:
    """The rows (cells, header and rule left out) of each table marked `<!-- kind: key -->`;
    tables that share a key are joined."""
    found: dict[str, list[list[str]]] = {}
    lines = REFERENCE.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        marker = re.fullmatch(rf"<!-- {kind}: (.+) -->", line.strip())
        if marker:
            found.setdefault(marker.group(1), []).extend(_rows(lines[index + 1 :]))
    return found


def _rows(lines: list[str]) -> list[list[str]]:
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    assert len(table) > 2, f"a marker without a table before {lines[:1]}"
    return table[2:]


def _quoted(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _first_column(kind: str, key: str) -> list[str]:
    return [name for row in _tables(kind)[key] for name in _quoted(row[0])]


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for argument in get_args(annotation):
        yield from _models_in(argument)


def _boundary_models() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    waiting = list(BOUNDARY_MODELS)
    while waiting:
        model = waiting.pop()
        if model.__name__ in found:
            assert found[model.__name__] is model, f"two models named {model.__name__}"
            continue
        found[model.__name__] = model
        for field in model.model_fields.values():
            waiting.extend(_models_in(field.annotation))
    return found


MODELS = _boundary_models()


def test_every_boundary_model_has_a_table_and_every_table_a_model() -> None:
    documented = set(_tables("fields"))
    assert sorted(MODELS.keys() - documented) == [], "models without a table in the reference"
    assert sorted(documented - MODELS.keys()) == [], "tables of models the code does not have"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_models_table_lists_exactly_its_fields(name: str) -> None:
    model = MODELS[name]
    documented = [row[0].strip("`") for row in _tables("fields")[name]]
    expected = set(model.model_fields) - NOT_WRITTEN.get(name, set())
    assert sorted(documented) == sorted(expected)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_models_table_gives_its_defaults(name: str) -> None:
    fields = MODELS[name].model_fields
    for row in _tables("fields")[name]:
        field = fields[row[0].strip("`")]
        if row[2] == "required":
            assert field.is_required(), f"{name}.{row[0]} has a default"
            continue
        literal = re.fullmatch(r"`([^`]+)`", row[2])
        assert literal, f"{name}.{row[0]}: default {row[2]!r} is neither required nor a `literal`"
        # Read the documented JSON as the field reads input, so `{}` for a nested model with
        # every default, or `60` for 60.0, compares equal to the field's own default.
        documented = TypeAdapter(field.annotation).validate_python(json.loads(literal.group(1)))
        assert documented == field.get_default(call_default_factory=True), f"{name}.{row[0]}"


@pytest.mark.parametrize("workflow_class", WORKFLOWS, ids=lambda cls: cls.__name__)
def test_a_workflows_signals_updates_and_queries_are_its_table(workflow_class: type) -> None:
    definition = workflow._Definition.from_class(workflow_class)
    assert definition is not None
    registered = {
        *(("signal", name) for name in definition.signals),
        *(("update", name) for name in definition.updates),
        *(("query", name) for name in definition.queries),
    }
    documented = {(row[0], row[1].strip("`")) for row in _tables("handlers")[definition.name]}
    assert sorted(documented) == sorted(registered)


def test_every_handler_name_constant_is_a_documented_handler() -> None:
    documented = {row[1].strip("`") for rows in _tables("handlers").values() for row in rows}
    constants = {
        value
        for module in (names, approvals)
        for constant, value in vars(module).items()
        if constant.startswith(("SIGNAL_", "UPDATE_", "QUERY_"))
    }
    assert sorted(constants - documented) == []


def test_error_types_are_the_contracts_constants() -> None:
    constants = {
        value
        for constant, value in vars(errors).items()
        if constant.isupper() and isinstance(value, str)
    } | {approvals.INVALID_STANDING_APPROVAL, TENANT_CAP_REACHED}
    assert sorted(_first_column("names", "error-types")) == sorted(constants)


def test_search_attributes_and_their_types() -> None:
    documented = {row[0].strip("`"): row[1] for row in _tables("names")["search-attributes"]}
    assert documented == names.SEARCH_ATTRIBUTES


def test_event_kinds() -> None:
    assert sorted(_first_column("names", "event-kinds")) == sorted(get_args(EventKind))


def test_activity_types() -> None:
    constants = {
        value
        for module in (names, approvals, mcp)
        for constant, value in vars(module).items()
        if constant.startswith("ACTIVITY_")
    }
    assert sorted(_first_column("names", "activity-types")) == sorted(constants)


def test_builtin_tools_their_inputs_and_approval(tmp_path: Path) -> None:
    registry = builtin_tools(Workspace(tmp_path))
    rows = _tables("tools")["builtin"]
    assert sorted(row[0].strip("`") for row in rows) == sorted(registry.names())
    for row in rows:
        tool = registry.get(row[0].strip("`"))
        assert tool is not None
        documented = {word for word in _quoted(row[1]) if re.fullmatch(r"[a-z_]+", word)}
        assert documented == set(tool.input_schema()["properties"]), row[0]
        assert (row[2] != "no") == tool.requires_approval, row[0]


def _commands() -> dict[str, set[str]]:
    """`turnkeeper` and each of its commands (`deploy promote`, …) -> its long options."""
    found: dict[str, set[str]] = {}

    def walk(command: Any, path: str) -> None:
        options = {
            option
            for param in command.params
            if param.param_type_name == "option"
            for option in (*param.opts, *param.secondary_opts)
            if option.startswith("--")
        }
        subcommands = getattr(command, "commands", None) or {}
        # A group that runs on its own too (`tenants`) is a command of its own.
        if not subcommands or not path or getattr(command, "invoke_without_command", False):
            found[path] = options
        for name, subcommand in subcommands.items():
            walk(subcommand, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return found


def _command_path(cell: str) -> str:
    """`turnkeeper deploy promote BUILD` -> `deploy promote`: the words before the arguments."""
    words = cell.strip("`").split()[1:]
    path = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        path.append(word)
    return " ".join(path)


def _options_in(text: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z0-9-]*", text))


def test_every_command_and_its_options_are_documented() -> None:
    commands = _commands()
    rows = {_command_path(row[0]): row for row in _tables("names")["commands"]}
    assert sorted(rows) == sorted(commands)
    for path, row in rows.items():
        documented = _options_in(row[1])
        assert sorted(documented - commands[path]) == [], f"turnkeeper {path} has no such option"
        missing = commands[path] - CONNECTION_OPTIONS - documented
        assert sorted(missing) == [], f"turnkeeper {path}: options left out of the reference"
    documented_anywhere = _options_in(REFERENCE.read_text(encoding="utf-8"))
    assert sorted(CONNECTION_OPTIONS - documented_anywhere) == []


def test_worker_flags() -> None:
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), pytest.raises(SystemExit):
        worker_cli.parse_args(["--help"])
    flags = set(re.findall(r"(?m)^  (?:-\w, )?(--[\w-]+)", help_text.getvalue())) - {"--help"}
    assert sorted(_first_column("names", "worker-flags")) == sorted(flags)


def _variables_read_by_code() -> set[str]:
    """Every environment variable our code names as a whole string literal: the constants the
    settings, the console and the telemetry read."""
    prefixes = "|".join(prefix.rstrip("_") for prefix in ENV_PREFIXES)
    pattern = re.compile(rf'"((?:{prefixes})_[A-Z0-9_]+)"')
    found: set[str] = set()
    for top in CODE:
        paths = [ROOT / top] if top.endswith(".py") else (ROOT / top).rglob("*.py")
        for path in paths:
            found |= set(pattern.findall(path.read_text(encoding="utf-8")))
    return found


@functools.cache
def _temporal_sdk_library() -> bytes:
    """`temporalio.envconfig` reads its variables in the SDK's Rust core, so their names are
    strings of its native library rather than of any Python source."""
    bridge = Path(temporalio.bridge.__file__).parent
    return b"".join(library.read_bytes() for library in bridge.glob("*.so"))


def test_every_variable_the_code_reads_is_documented() -> None:
    documented = set(_first_column("names", "environment"))
    assert sorted(_variables_read_by_code() - documented) == []


def test_every_documented_variable_of_ours_is_read() -> None:
    documented = set(_first_column("names", "environment"))
    read = _variables_read_by_code()
    ours = {name for name in documented if name.startswith(("TURNKEEPER_", "AGENT_"))}
    assert sorted(ours - read) == [], "documented, but no code reads them"
    temporal = {name for name in documented if name.startswith("TEMPORAL_")} - read
    assert sorted(name for name in temporal if name.encode() not in _temporal_sdk_library()) == []


def test_the_python_names_are_turnkeepers_all() -> None:
    assert sorted(_first_column("names", "library")) == sorted(turnkeeper.__all__)


def _tracked_text_files() -> list[Path]:
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = [ROOT / name for name in listing.split("\0") if name]
    return [path for path in paths if path.is_file() and b"\0" not in path.read_bytes()[:8192]]


def test_no_tracked_file_points_outside_the_repository() -> None:
    # The contract this project once followed lived beside the repository, so links to it
    # were broken in every clone; the reference is the repository's own.
    this_file = Path(__file__).resolve()
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _tracked_text_files()
        if path.resolve() != this_file
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if "../shared" in line or "CONTRACT.md" in line
    ]
    assert offenders == []
    assert "(docs/reference.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
