"""Where the turns live, as the console shows it: links to the Web UI and the commands it prints
for the user to copy (`turnkeeper approve …`, `temporal workflow show …`), spelled so that they
run as printed (`programs.py`). The library client prints no command, so this is the console's."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import quote

from turnkeeper.console.programs import temporal_program, turnkeeper_program

DEFAULT_UI_URL: Final = "http://localhost:8233"


@dataclass(frozen=True)
class Target:
    """Where the turns live, for links and for the commands printed for the user to copy.

    Attributes:
        turnkeeper, temporal: How a printed command calls our program and the `temporal` CLI so
            that it runs as printed (see `turnkeeper.console.programs`).
        environment: Variables that a printed command of ours sets first so that it finds the
            same files (the demo's `--data-dir`), as (name, value) pairs.
    """

    address: str
    namespace: str
    ui_url: str = DEFAULT_UI_URL
    turnkeeper: str = field(default_factory=turnkeeper_program)
    temporal: str = field(default_factory=temporal_program)
    environment: tuple[tuple[str, str], ...] = ()

    def workflow_url(self, workflow_id: str) -> str:
        base = self.ui_url.rstrip("/")
        return f"{base}/namespaces/{quote(self.namespace)}/workflows/{quote(workflow_id, safe='')}"

    def connection_flags(self) -> list[str]:
        """`--address`/`--namespace` to repeat in a printed command, when not the defaults."""
        flags: list[str] = []
        if self.address not in ("localhost:7233", "127.0.0.1:7233"):
            flags += ["--address", self.address]
        if self.namespace != "default":
            flags += ["--namespace", self.namespace]
        return flags

    def ours(self, *words: str) -> str:
        """A `turnkeeper` command to copy: its variables, the program, `words`, the flags."""
        return shell([self.turnkeeper, *words, *self.connection_flags()], self.environment)

    def temporal_cli(self, *words: str) -> str:
        """A `temporal` command to copy, with the flags that reach the same server."""
        return shell([self.temporal, *words, *self.connection_flags()])


def shell(words: list[str], environment: tuple[tuple[str, str], ...] = ()) -> str:
    """`words` as one shell command line, each quoted where the shell would split it, after the
    `NAME=value` assignments of `environment`."""
    variables = [f"{name}={shlex.quote(value)}" for name, value in environment]
    return " ".join([*variables, *(shlex.quote(word) for word in words)])
