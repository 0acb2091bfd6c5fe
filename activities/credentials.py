"""Credentials that rotate: a secret read from a file or printed by a command, kept in memory and
read again when the server it is sent to answers 401.

An MCP server's bearer token (`bearer` in `TURNKEEPER_MCP_CONFIG`) and a model provider's key
(`api_key_file` / `api_key_command` in `TURNKEEPER_PROVIDERS`, `ANTHROPIC_API_KEY_FILE` and the
like) may come from such a source, so that an agent that renews them outside the worker (a
Kubernetes secret mount, vault-agent, an OAuth token refresher, `gcloud auth print-access-token`)
needs no worker restart.

The value lives in one `RotatingCredential` per configured source. Many calls that meet a 401
together (a rotation seen by every turn at once) read the source once: each asks for a value
newer than the one it sent (`refreshed(generation)`), and the first one in reads the source while
the others wait for that read and take its result. The secret never appears in a repr, a log line or
an error: errors name the config entry and the file or the command's program, and a failed
command's output is not quoted (a command that fails may print the secret it was asked for).
"""

from __future__ import annotations

import asyncio
import subprocess
import weakref
from pathlib import Path
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from turnkeeper.ground.logs import get_logger

log = get_logger(__name__)

# A command that prints a token (a vault or cloud CLI) answers in seconds; one that hangs must
# not hold every call that waits for the new value.
DEFAULT_COMMAND_TIMEOUT_S: Final = 10.0
# Past values are kept only to redact them from errors that echo a key sent before a rotation.
_REMEMBERED_VALUES: Final = 4


# Every credential of the process, for the places that must scrub secrets from what they write
# (the cassette recorder): values read from a file are in no environment variable to look for.
_LIVE: weakref.WeakSet[RotatingCredential] = weakref.WeakSet()


def secrets_in_use() -> list[str]:
    """The values (current and a few earlier) of every credential read from a file or command."""
    return [value for credential in list(_LIVE) for value in credential.values_sent()]


class CredentialError(ValueError):
    """A credential source cannot be read; the message names the config entry, never the value."""


class CredentialSource(BaseModel):
    """Where a secret is read: exactly one of `file` (its whole content, surrounding whitespace
    removed) or `command` (its standard output, the same way; run without a shell)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Path | None = None
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    timeout_s: float = Field(default=DEFAULT_COMMAND_TIMEOUT_S, gt=0, le=300)

    @model_validator(mode="after")
    def _one_source(self) -> CredentialSource:
        if (self.file is None) == (self.command is None):
            raise ValueError("needs exactly one of 'file' (a path) or 'command' (a list of words)")
        if self.file is not None and "timeout_s" in self.model_fields_set:
            raise ValueError("timeout_s applies to a 'command' only")
        return self

    def describe(self) -> str:
        """The source as an error names it: the file's path, or the command's program only
        (its arguments may hold a secret of their own)."""
        if self.file is not None:
            return f"file {str(self.file)!r}"
        assert self.command is not None
        return f"command {self.command[0]!r}"


def read_credential(source: CredentialSource, where: str) -> str:
    """The secret `source` holds now; `where` names the config entry in errors.

    Raises:
        CredentialError: the file is missing or unreadable, the command cannot start, fails or
            times out, or the value is empty or spans lines (no header can carry it).
    """
    value = _read_file(source.file, where) if source.file else _run(source, where)
    value = value.strip()
    if not value:
        raise CredentialError(f"{where}: {source.describe()} gave an empty value")
    if "\n" in value or "\r" in value:
        raise CredentialError(f"{where}: {source.describe()} gave more than one line")
    return value


def _read_file(path: Path, where: str) -> str:
    what = f"{where}: file {str(path)!r}"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CredentialError(f"{what} does not exist") from None
    except PermissionError:
        raise CredentialError(f"{what} cannot be read (permission denied)") from None
    except IsADirectoryError:
        raise CredentialError(f"{what} is a directory") from None
    except UnicodeDecodeError:
        raise CredentialError(f"{what} is not UTF-8 text") from None
    except OSError as err:
        raise CredentialError(f"{what} cannot be read ({err.strerror})") from None


def _run(source: CredentialSource, where: str) -> str:
    assert source.command is not None
    what = source.describe()
    try:
        done = subprocess.run(
            source.command,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=source.timeout_s,
            check=False,
        )
    except FileNotFoundError:
        raise CredentialError(f"{where}: {what} was not found") from None
    except PermissionError:
        raise CredentialError(f"{where}: {what} cannot be run (permission denied)") from None
    except subprocess.TimeoutExpired:
        raise CredentialError(
            f"{where}: {what} did not finish within {source.timeout_s:g} s"
        ) from None
    except OSError as err:
        raise CredentialError(f"{where}: {what} cannot be run ({err.strerror})") from None
    if done.returncode != 0:
        # Its output is not quoted: a failing secret command may still print the secret.
        raise CredentialError(
            f"{where}: {what} exited with status {done.returncode} (its output is not shown; "
            "run it by hand to see why)"
        )
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise CredentialError(f"{where}: {what} printed something that is not UTF-8") from None


class RotatingCredential:
    """One source's current value, read on first use and again on request after a 401.

    Args:
        source: where the value is read.
        where: the config entry, named in errors and logs (e.g. `servers.search.bearer`).
        value: the value already read (at worker start, to check the source); None: read at
            first use.
    """

    def __init__(self, source: CredentialSource, where: str, value: str | None = None) -> None:
        self.source = source
        self.where = where
        self._value = value
        self._generation = 0
        self._earlier: list[str] = []
        self._reading: asyncio.Future[tuple[str, int]] | None = None
        _LIVE.add(self)

    def __repr__(self) -> str:
        return f"RotatingCredential({self.where}: {self.source.describe()})"

    async def current(self) -> tuple[str, int]:
        """The value and its generation, read from the source the first time.

        Raises:
            CredentialError: the first read failed.
        """
        if self._value is None:
            return await self.refreshed(self._generation)
        return self._value, self._generation

    async def refreshed(self, seen: int) -> tuple[str, int]:
        """A value newer than generation `seen` (the one a refused request carried): read from
        the source, unless another caller has read it since. Callers that ask while a read is
        under way share its outcome, a failure included, so a storm of 401s reads once.

        Raises:
            CredentialError: the source cannot be read; the cached value is kept.
        """
        if self._value is not None and self._generation != seen:
            return self._value, self._generation
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read_again())
            self._reading.add_done_callback(self._read_done)
        # Shielded: a caller that is cancelled does not cancel the read the others wait for.
        return await asyncio.shield(self._reading)

    async def _read_again(self) -> tuple[str, int]:
        try:
            value = await asyncio.to_thread(read_credential, self.source, self.where)
        except CredentialError as err:
            log.warning("credential_unreadable", source=self.where, error=str(err))
            raise
        previous, self._value = self._value, value
        self._generation += 1
        if previous is not None:
            if previous == value:
                # The server refused this value: whatever renews it has not done so yet.
                log.warning("credential_unchanged", source=self.where)
            else:
                self._earlier = [previous, *self._earlier][:_REMEMBERED_VALUES]
                log.info("credential_renewed", source=self.where, generation=self._generation)
        return value, self._generation

    def _read_done(self, reading: asyncio.Future[tuple[str, int]]) -> None:
        self._reading = None
        if not reading.cancelled():
            reading.exception()  # retrieved: every caller may have been cancelled meanwhile

    def values_sent(self) -> list[str]:
        """The current value and a few before it, for redaction of errors that echo one."""
        return [v for v in [self._value, *self._earlier] if v]
