"""The worker's MCP servers, read from the JSON file named by `TURNKEEPER_MCP_CONFIG`.

```json
{"servers": {
  "files":  {"command": ["python", "-m", "files_server"], "env": {"ROOT": "/data"}, "cwd": "."},
  "search": {"url": "http://127.0.0.1:8000/mcp",
             "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}, "timeout_s": 30}
}}
```

A server has either a `command` (stdio: the worker starts it as a subprocess) or a `url`
(streamable HTTP). Header and `env` values may refer to the worker's environment as `${NAME}`,
so secrets stay out of the file. They are checked when the file is loaded (a missing variable is
an error at worker start, not at the first call) but substituted only when a connection is
opened: the loaded config, its repr and the logs hold the `${NAME}` form, never the secret, and
nothing of either reaches workflow history. A stdio server does not inherit the worker's
environment (only the SDK's safe defaults such as PATH and HOME), so the worker's own secrets
reach a third-party server only when its `env` says so.

An HTTP server's token may rotate (an OAuth access token renewed by an agent outside the worker, a
mounted secret): `"bearer": {"file": PATH}` or `"bearer": {"command": [...], "timeout_s": 10}`
sends `Authorization: Bearer <value>`, read when the worker starts (to check it) and again when
the server answers 401, the request then retried once (`activities/credentials.py`,
`activities/mcp/bearer_auth.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from turnkeeper.activities.credentials import CredentialError, CredentialSource, read_credential
from turnkeeper.contracts.mcp import validate_server_name

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_Seconds = Annotated[float, Field(gt=0, le=3600)]


class McpConfigError(ValueError):
    """The MCP config file cannot be used; the message names the file and the field."""


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    timeout_s: _Seconds = 60.0  # one tool call
    connect_timeout_s: _Seconds = 30.0  # starting the server or reaching it, and the handshake


class StdioServerConfig(_ServerBase):
    """A server the worker starts as a subprocess and talks to over stdin/stdout."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: Path | None = None

    def resolved_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """`env` with its `${NAME}` references filled in from `environ`."""
        return {key: expand_env(value, environ) for key, value in self.env.items()}


class HttpServerConfig(_ServerBase):
    """A server reached over streamable HTTP."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    # A token that rotates: sent as `Authorization: Bearer`, re-read after a 401. Out of the
    # repr as `headers` is: a command's arguments may hold a secret of their own.
    bearer: CredentialSource | None = Field(default=None, repr=False)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url

    def resolved_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """`headers` with their `${NAME}` references filled in from `environ`."""
        return {key: expand_env(value, environ) for key, value in self.headers.items()}


McpServerConfig = StdioServerConfig | HttpServerConfig


class McpConfig(BaseModel):
    """The worker's MCP servers by name; empty when no config file is set."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)


def expand_env(template: str, environ: Mapping[str, str]) -> str:
    """`template` with each `${NAME}` replaced by `environ[NAME]`.

    Raises:
        KeyError: a referenced variable is not set (the message names it, never a value).
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise KeyError(f"${{{name}}} is not set in the worker's environment")
        return environ[name]

    return _ENV_REFERENCE.sub(value, template)


def load_mcp_config(path: Path | None, environ: Mapping[str, str]) -> McpConfig:
    """Read and check the config file at `path` (`None`: no MCP servers).

    Raises:
        McpConfigError: the file is missing, not JSON, or a field is wrong; the message says
            which file and which field (e.g. `servers.search.url`).
    """
    if path is None:
        return McpConfig()
    raw = read_json_file(path, "MCP config", McpConfigError)
    try:
        return parse_mcp_config(raw, base_dir=path.parent, environ=environ)
    except McpConfigError as err:
        raise McpConfigError(f"MCP config {path}: {err}") from None


def read_json_file(path: Path, what: str, error: type[ValueError]) -> Any:
    """The decoded JSON of a worker's config file; `error` (its message naming `what` and the
    file) when it is missing, unreadable or not JSON. Shared with the A2A config."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{what} {path} cannot be read: {err}") from None
    except json.JSONDecodeError as err:
        raise error(f"{what} {path} is not valid JSON: {err}") from None


def parse_mcp_config(raw: Any, *, base_dir: Path, environ: Mapping[str, str]) -> McpConfig:
    """The config from the decoded JSON; relative `cwd`s are taken from `base_dir`.

    Raises:
        McpConfigError: the message starts with the path of the wrong field.
    """
    if not isinstance(raw, dict) or set(raw) != {"servers"}:
        raise McpConfigError('the file must be one object {"servers": {<name>: {...}}}')
    if not isinstance(raw["servers"], dict):
        raise McpConfigError("servers: must be an object of server name -> server")
    return McpConfig(
        servers={
            name: _server(name, entry, base_dir, environ) for name, entry in raw["servers"].items()
        }
    )


def _server(name: str, entry: Any, base_dir: Path, environ: Mapping[str, str]) -> McpServerConfig:
    where = f"servers.{name}"
    try:
        validate_server_name(name)
    except ValueError as err:
        raise McpConfigError(f"{where}: {err}") from None
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where}: must be an object")
    kind = _kind(entry, where)
    try:
        server = kind.model_validate({**entry, "name": name})
    except ValidationError as err:
        raise McpConfigError(_explain(where, err)) from None
    _check_references(server, where, environ)
    if isinstance(server, HttpServerConfig) and server.bearer is not None:
        server = _bearer_from(server, base_dir)
        _check_bearer(server, where)
    if isinstance(server, StdioServerConfig) and server.cwd is not None:
        server = server.model_copy(update={"cwd": (base_dir / server.cwd).resolve()})
    return server


def _kind(entry: dict[str, Any], where: str) -> type[McpServerConfig]:
    if "name" in entry:
        raise McpConfigError(f"{where}.name: not allowed; the server's key is its name")
    if ("command" in entry) == ("url" in entry):
        raise McpConfigError(
            f"{where}: needs exactly one of 'command' (a stdio server the worker starts) "
            "or 'url' (a streamable HTTP server)"
        )
    return StdioServerConfig if "command" in entry else HttpServerConfig


def _check_references(server: McpServerConfig, where: str, environ: Mapping[str, str]) -> None:
    if isinstance(server, StdioServerConfig):
        field, values = "env", server.env
    else:
        field, values = "headers", server.headers
    for key, template in values.items():
        try:
            expand_env(template, environ)
        except KeyError as err:
            raise McpConfigError(f"{where}.{field}.{key}: {err.args[0]}") from None


def _bearer_from(server: HttpServerConfig, base_dir: Path) -> HttpServerConfig:
    """A relative token file is taken from the config file's folder, as a relative `cwd` is."""
    assert server.bearer is not None
    if server.bearer.file is None or server.bearer.file.is_absolute():
        return server
    source = server.bearer.model_copy(update={"file": (base_dir / server.bearer.file).resolve()})
    return server.model_copy(update={"bearer": source})


def _check_bearer(server: HttpServerConfig, where: str) -> None:
    """The token source is read once, so that a wrong path or a failing command stops the worker
    at start, as a missing `${NAME}` does; the value is not kept here."""
    assert server.bearer is not None
    if any(key.lower() == "authorization" for key in server.headers):
        raise McpConfigError(
            f"{where}: has both 'bearer' and an Authorization header; keep one of them"
        )
    try:
        read_credential(server.bearer, f"{where}.bearer")
    except CredentialError as err:
        raise McpConfigError(str(err)) from None


def _explain(where: str, err: ValidationError) -> str:
    problems = []
    for error in err.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in error["loc"])
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(f"{where}.{field}: {message}")
    return "; ".join(problems)


def unknown_server(server: str, configured: Mapping[str, object]) -> str:
    """Why `server`'s tools are not offered: the worker has no server of that name."""
    names = ", ".join(sorted(configured)) or "none"
    return f"MCP server {server!r} is not configured on this worker (configured: {names})"


def unknown_server_call(server: str) -> str:
    return f"unknown MCP server {server!r}: this worker is not configured with it"
