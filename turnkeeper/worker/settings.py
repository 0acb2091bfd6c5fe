"""Worker settings read from the environment.

Only paths and names live here. Secrets (`ANTHROPIC_API_KEY`, `TEMPORAL_API_KEY`) stay in the
environment and are read by the libraries that need them, so a logged or repr'd `Settings` never
leaks one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from turnkeeper.activities.providers.cassette_provider import CASSETTE_MODES, CassetteSettings
from turnkeeper.activities.sandbox.limits import SandboxLimits
from turnkeeper.client.attachments import attachment_limits, url_hosts
from turnkeeper.client.env_numbers import whole_number
from turnkeeper.client.settings_error import SettingsError
from turnkeeper.contracts.attachments import AttachmentLimits
from turnkeeper.contracts.guardrails import DEFAULT_GUARDRAIL_MAX_CHARS, GUARDRAIL_MAX_CHARS_ENV
from turnkeeper.contracts.names import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV
from turnkeeper.contracts.plaintext import REQUIRE_ENCRYPTION_ENV
from turnkeeper.contracts.policies import POLICY_FILE_ENV
from turnkeeper.contracts.rate_limits import (
    RATE_LIMITS_ENV,
    RateLimit,
    RateLimitConfigError,
    parse_rate_limits,
)
from turnkeeper.contracts.result_limits import (
    DEFAULT_MAX_RESULT_BYTES,
    MAX_RESULT_BYTES,
    MIN_RESULT_BYTES,
)
from turnkeeper.contracts.skills import SKILLS_DIR_ENV
from turnkeeper.contracts.tools import DEFAULT_MAX_WRITE_BYTES
from turnkeeper.devtools.devserver import DEV_SERVER_DB_FILENAME
from turnkeeper.payloads.stores import StoreSettings
from turnkeeper.worker.sandbox_settings import sandbox_limits
from turnkeeper.worker.worker_tuning import WorkerTuning

WORKSPACE_ENV = "AGENT_WORKSPACE"
MAX_TOOL_RESULT_BYTES_ENV = "TURNKEEPER_MAX_TOOL_RESULT_BYTES"
MAX_WRITE_BYTES_ENV = "TURNKEEPER_MAX_WRITE_BYTES"
MCP_CONFIG_ENV = "TURNKEEPER_MCP_CONFIG"
A2A_CONFIG_ENV = "TURNKEEPER_A2A_CONFIG"
CASSETTE_ENV = "TURNKEEPER_CASSETTE"
CASSETTE_MODE_ENV = "TURNKEEPER_CASSETTE_MODE"

_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"", "0", "false", "no", "off"})

DEFAULT_WORKSPACE = "./workspace"


@dataclass(frozen=True)
class Settings:
    """Where the worker listens and where it keeps files.

    Attributes:
        task_queue: Temporal task queue the worker polls.
        workspace: Sandbox folder of the built-in file tools.
        data_dir: Local state: the dev server's SQLite file, its log and the content store.
        store_dir: Folder of the content store (claim-checked conversation content), used when
            `store_url` is unset.
        max_tool_result_bytes: Cap on one tool result; larger ones are truncated with a marker.
        max_write_bytes: Cap on the content of one write_file call; longer content is refused.
        mcp_config: JSON file of the worker's MCP servers (`activities/mcp/config.py`); None: none.
        a2a_config: JSON file of the remote A2A agents the worker's turns may call
            (`TURNKEEPER_A2A_CONFIG`, `activities/a2a/config.py`); None: none.
        store_url: A content store shared by every host of a cluster, `s3://bucket` or
            `s3://bucket/optional/prefix` on S3 or an S3-compatible service (needs the `s3`
            extra; endpoint, region and credentials come from boto3's `AWS_*` variables).
            None: the local folder `store_dir`.
        tuning: The worker's Temporal settings (pollers, sticky cache, concurrency).
        require_encryption: Refuse turn requests, signals and updates that reach the worker
            unencrypted (`TURNKEEPER_REQUIRE_ENCRYPTION`); it needs `TURNKEEPER_ENCRYPTION_KEYS`.
        cassette: Record the model calls to a file or answer them from it
            (`TURNKEEPER_CASSETTE`, `TURNKEEPER_CASSETTE_MODE`); None: every call reaches its
            provider.
        rate_limits: Limits shared by every worker of the namespace, by `provider:model` or
            `provider:*` (`TURNKEEPER_RATE_LIMITS`); empty: none.
        skills_dir: The folder of the worker's skills, one sub-folder with a `SKILL.md` each
            (`TURNKEEPER_SKILLS_DIR`); None: no skills but those given in code.
        guardrail_max_chars: The limit of the built-in `size_cap` guardrail, in characters
            (`TURNKEEPER_GUARDRAIL_MAX_CHARS`).
        policy_files: Cedar policy files that check the tool calls of agents with
            `agent.policy` (`TURNKEEPER_POLICY_FILE`, several separated by `:`); empty: none.
        attachment_limits: The largest attachment and the most a turn may attach
            (`TURNKEEPER_ATTACHMENT_MAX_BYTES`, `TURNKEEPER_ATTACHMENT_MAX_TURN_BYTES`).
        attachment_url_hosts: The hosts attachment URLs may name
            (`TURNKEEPER_ATTACHMENT_URL_HOSTS`); empty: URL sources are refused.
    """

    task_queue: str
    workspace: Path
    data_dir: Path
    store_dir: Path
    max_tool_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES
    mcp_config: Path | None = None
    store_url: str | None = None
    tuning: WorkerTuning = field(default_factory=WorkerTuning)
    require_encryption: bool = False
    cassette: CassetteSettings | None = None
    rate_limits: dict[str, RateLimit] = field(default_factory=dict)
    skills_dir: Path | None = None
    a2a_config: Path | None = None
    guardrail_max_chars: int = DEFAULT_GUARDRAIL_MAX_CHARS
    policy_files: tuple[Path, ...] = ()
    attachment_limits: AttachmentLimits = field(default_factory=AttachmentLimits)
    attachment_url_hosts: frozenset[str] = frozenset()
    sandbox: SandboxLimits = field(default_factory=SandboxLimits)

    @property
    def dev_server_db(self) -> Path:
        """SQLite file of the embedded dev server, so that runs survive a restart."""
        return self.data_dir / DEV_SERVER_DB_FILENAME

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from `env` (default: the process environment).

        Relative paths are resolved against the current directory now, so that a later `chdir`
        cannot move the workspace under a running worker. An empty variable counts as unset.
        """
        source = os.environ if env is None else env
        # The store's variables are read where every client reads them, so that both agree.
        store = StoreSettings.from_env(source)
        return cls(
            task_queue=source.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE,
            workspace=_absolute(source.get(WORKSPACE_ENV) or DEFAULT_WORKSPACE),
            data_dir=store.data_dir,
            store_dir=store.store_dir,
            max_tool_result_bytes=whole_number(
                source,
                MAX_TOOL_RESULT_BYTES_ENV,
                DEFAULT_MAX_RESULT_BYTES,
                minimum=MIN_RESULT_BYTES,
                maximum=MAX_RESULT_BYTES,
            ),
            max_write_bytes=whole_number(
                source, MAX_WRITE_BYTES_ENV, DEFAULT_MAX_WRITE_BYTES, minimum=1
            ),
            mcp_config=_optional_path(source.get(MCP_CONFIG_ENV)),
            store_url=store.store_url,
            tuning=WorkerTuning.from_env(source),
            require_encryption=_yes_or_no(source, REQUIRE_ENCRYPTION_ENV),
            cassette=_cassette(source),
            rate_limits=_rate_limits(source),
            skills_dir=_optional_path(source.get(SKILLS_DIR_ENV)),
            a2a_config=_optional_path(source.get(A2A_CONFIG_ENV)),
            guardrail_max_chars=whole_number(
                source, GUARDRAIL_MAX_CHARS_ENV, DEFAULT_GUARDRAIL_MAX_CHARS, minimum=1
            ),
            policy_files=_paths(source.get(POLICY_FILE_ENV)),
            attachment_limits=attachment_limits(source),
            attachment_url_hosts=url_hosts(source),
            sandbox=sandbox_limits(source),
        )


def _cassette(env: Mapping[str, str]) -> CassetteSettings | None:
    """The cassette settings; the mode defaults to `replay`, the one that reaches no provider.

    Raises:
        SettingsError: An unknown mode, or a mode without a cassette file.
    """
    path, mode = env.get(CASSETTE_ENV), env.get(CASSETTE_MODE_ENV) or "replay"
    if mode not in CASSETTE_MODES:
        raise SettingsError(
            f"{CASSETTE_MODE_ENV} must be record or replay, got {env[CASSETTE_MODE_ENV]!r}"
        )
    if not path:
        if env.get(CASSETTE_MODE_ENV):
            raise SettingsError(f"{CASSETTE_MODE_ENV} is set but {CASSETTE_ENV} names no file")
        return None
    return CassetteSettings(path=_absolute(path), mode=mode)  # type: ignore[arg-type]


def _yes_or_no(env: Mapping[str, str], name: str) -> bool:
    """A switch. Anything but a plain yes or no is refused rather than read as no: a typo must
    not turn a security requirement off without a word."""
    value = env.get(name, "").strip().lower()
    if value in _YES or value in _NO:
        return value in _YES
    raise SettingsError(f"{name} must be 1 or 0 (or true/false, yes/no), got {env[name]!r}")


def _rate_limits(env: Mapping[str, str]) -> dict[str, RateLimit]:
    try:
        return parse_rate_limits(env.get(RATE_LIMITS_ENV))
    except RateLimitConfigError as err:
        raise SettingsError(str(err)) from None


def _absolute(path: str) -> Path:
    return Path(path).expanduser().resolve()


def _paths(paths: str | None) -> tuple[Path, ...]:
    return tuple(_absolute(path) for path in (paths or "").split(os.pathsep) if path.strip())


def _optional_path(path: str | None) -> Path | None:
    return _absolute(path) if path else None
