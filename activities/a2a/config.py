"""The remote A2A agents a worker may call, read from the JSON file named by
`TURNKEEPER_A2A_CONFIG`.

```json
{"agents": {
  "research": {"url": "https://research.example.com/",
               "bearer": {"file": "/run/secrets/research-token"}, "timeout_s": 900},
  "pricing":  {"url": "http://127.0.0.1:9999/.well-known/agent-card.json",
               "headers": {"X-Api-Key": "${PRICING_KEY}"}}
}}
```

`url` is the agent's base URL (its card is read from `/.well-known/agent-card.json` below it) or
the card's own URL (ending in `.json`). An agent file names the agents it may call
(`agent.a2a_agents`); the worker decides where they are and how it authenticates, so that no
request can point a worker at a URL of its choosing or carry a credential into history.
Credentials work as for MCP servers (`activities/mcp/config.py`): `headers` values may name the
worker's environment as `${NAME}`, substituted only when a request is sent, and a token that
rotates is `"bearer": {"file": PATH}` or `{"command": [...]}`, read at start and again when the
agent answers 401.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from turnkeeper.activities.credentials import CredentialError, CredentialSource, read_credential
from turnkeeper.activities.mcp.config import expand_env, read_json_file
from turnkeeper.contracts.a2a_agents import A2A_AGENT_NAME_PATTERN

_Seconds = Annotated[float, Field(gt=0)]
CARD_SUFFIX = ".json"


class A2aConfigError(ValueError):
    """The A2A config file cannot be used; the message names the file and the field."""


class A2aAgentConfig(BaseModel):
    """One remote agent: where it is, how to authenticate, how long its tasks may take."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    url: str
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    # Out of the repr as `headers` is: a command's arguments may hold a secret of their own.
    bearer: CredentialSource | None = Field(default=None, repr=False)
    timeout_s: Annotated[float, Field(gt=0, le=7 * 86_400)] = 600.0  # one call, task included
    request_timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0  # one HTTP request

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url

    def card_location(self) -> tuple[str, str | None]:
        """`(base URL, card path)` for the SDK's card resolver; None: the well-known path."""
        if self.url.endswith(CARD_SUFFIX):
            base, _, card = self.url.rpartition("/")
            return base, card
        return self.url, None

    def resolved_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """`headers` with their `${NAME}` references filled in from `environ`."""
        return {key: expand_env(value, environ) for key, value in self.headers.items()}

    def activity_timeout_s(self) -> float:
        """The longest one activity takes before it answers: the card, then the request."""
        return 2 * self.request_timeout_s + 5.0


class A2aConfig(BaseModel):
    """The worker's remote agents by name; empty when no config file is set."""

    model_config = ConfigDict(frozen=True)

    agents: dict[str, A2aAgentConfig] = Field(default_factory=dict)


def load_a2a_config(path: Path | None, environ: Mapping[str, str]) -> A2aConfig:
    """Read and check the config file at `path` (`None`: no remote agents).

    Raises:
        A2aConfigError: the file is missing, not JSON, or a field is wrong; the message says
            which file and which field (e.g. `agents.research.url`).
    """
    if path is None:
        return A2aConfig()
    raw = read_json_file(path, "A2A config", A2aConfigError)
    try:
        return parse_a2a_config(raw, base_dir=path.parent, environ=environ)
    except A2aConfigError as err:
        raise A2aConfigError(f"A2A config {path}: {err}") from None


def parse_a2a_config(raw: Any, *, base_dir: Path, environ: Mapping[str, str]) -> A2aConfig:
    """The config from the decoded JSON; a relative token file is taken from `base_dir`.

    Raises:
        A2aConfigError: the message starts with the path of the wrong field.
    """
    if not isinstance(raw, dict) or set(raw) != {"agents"} or not isinstance(raw["agents"], dict):
        raise A2aConfigError('the file must be one object {"agents": {<name>: {...}}}')
    return A2aConfig(
        agents={
            name: _agent(name, entry, base_dir, environ) for name, entry in raw["agents"].items()
        }
    )


def _agent(name: str, entry: Any, base_dir: Path, environ: Mapping[str, str]) -> A2aAgentConfig:
    where = f"agents.{name}"
    if not re.fullmatch(A2A_AGENT_NAME_PATTERN, name):
        raise A2aConfigError(f"{where}: the name must be a tool name, 1 to 64 of a-z A-Z 0-9 _ -")
    if not isinstance(entry, dict) or "name" in entry:
        raise A2aConfigError(f"{where}: must be an object (the key is the agent's name)")
    try:
        agent = A2aAgentConfig.model_validate({**entry, "name": name})
    except ValidationError as err:
        problems = [
            f"{where}.{'.'.join(str(p) for p in e['loc'])}: "
            + ("unknown field" if e["type"] == "extra_forbidden" else e["msg"])
            for e in err.errors(include_url=False, include_input=False)
        ]
        raise A2aConfigError("; ".join(problems)) from None
    for key, template in agent.headers.items():
        try:
            expand_env(template, environ)
        except KeyError as err:
            raise A2aConfigError(f"{where}.headers.{key}: {err.args[0]}") from None
    if agent.bearer is not None:
        agent = _bearer_checked(agent, base_dir, where)
    return agent


def _bearer_checked(agent: A2aAgentConfig, base_dir: Path, where: str) -> A2aAgentConfig:
    """The token source with a relative file taken from the config's folder, read once so that
    a wrong path or a failing command stops the worker at start; the value is not kept."""
    assert agent.bearer is not None
    if any(key.lower() == "authorization" for key in agent.headers):
        raise A2aConfigError(f"{where}: has both 'bearer' and an Authorization header; keep one")
    source = agent.bearer
    if source.file is not None and not source.file.is_absolute():
        source = source.model_copy(update={"file": (base_dir / source.file).resolve()})
    try:
        read_credential(source, f"{where}.bearer")
    except CredentialError as err:
        raise A2aConfigError(str(err)) from None
    return agent.model_copy(update={"bearer": source})


def unknown_agent(name: str, configured: Mapping[str, object]) -> str:
    """Why `name` is not offered: the worker has no remote agent of that name."""
    names = ", ".join(sorted(configured)) or "none"
    return f"A2A agent {name!r} is not configured on this worker (configured: {names})"
