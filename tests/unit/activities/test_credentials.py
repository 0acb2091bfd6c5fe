"""Credential sources (`activities/credentials.py`): each bad source is an error that names the
config entry and the source, never the value, and the cached value is read again only when asked
for one newer than a request carried."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from turnkeeper.activities.credentials import (
    CredentialError,
    CredentialSource,
    RotatingCredential,
    read_credential,
)

ENTRY = "servers.search.bearer"
SECRET = "sk-live-0123456789abcdef"


def python(code: str, *arguments: str, timeout_s: float | None = None) -> CredentialSource:
    options = {} if timeout_s is None else {"timeout_s": timeout_s}
    return CredentialSource(command=[sys.executable, "-c", code, *arguments], **options)


def read_error(source: CredentialSource) -> str:
    with pytest.raises(CredentialError) as raised:
        read_credential(source, ENTRY)
    message = str(raised.value)
    assert message.startswith(f"{ENTRY}: ")
    assert SECRET not in message
    return message


def test_a_file_is_read_whole_without_its_final_newline(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(f"  {SECRET}\n")
    assert read_credential(CredentialSource(file=token), ENTRY) == SECRET


def test_a_command_gives_its_standard_output() -> None:
    assert read_credential(python(f"print({SECRET!r})"), ENTRY) == SECRET


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "gave an empty value"),
        (b" \n\t\n", "gave an empty value"),
        (b"one\ntwo\n", "gave more than one line"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_a_file_that_holds_no_usable_token_is_refused(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    token = tmp_path / "token"
    token.write_bytes(content)
    assert problem in read_error(CredentialSource(file=token))


def test_a_missing_file_and_a_directory_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    assert read_error(CredentialSource(file=missing)) == (
        f"{ENTRY}: file {str(missing)!r} does not exist"
    )
    assert read_error(CredentialSource(file=tmp_path)).endswith("is a directory")


def test_a_failing_command_is_named_and_its_output_not_quoted() -> None:
    leaky = python(
        f"import sys; print({SECRET!r}); print('denied ' + {SECRET!r}, file=sys.stderr); "
        "sys.exit(3)"
    )
    message = read_error(leaky)
    assert f"command {sys.executable!r} exited with status 3" in message
    assert "denied" not in message


def test_a_command_that_hangs_is_stopped_at_its_timeout() -> None:
    message = read_error(python("import time; time.sleep(30)", timeout_s=0.5))
    assert message.endswith("did not finish within 0.5 s")


def test_a_command_that_does_not_exist_is_named() -> None:
    message = read_error(CredentialSource(command=["no-such-token-helper", SECRET]))
    assert message == f"{ENTRY}: command 'no-such-token-helper' was not found"


def test_a_command_that_prints_nothing_is_refused() -> None:
    assert read_error(python("pass")).endswith("gave an empty value")


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"file": "a", "command": ["b"]},
        {"command": []},
        {"command": [""]},
        {"file": "a", "timeout_s": 3},
        {"command": ["b"], "timeout_s": 0},
        {"env": "X"},
    ],
)
def test_a_source_must_be_one_file_or_one_command(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CredentialSource.model_validate(fields)


async def test_a_rotation_seen_by_many_calls_is_read_once(tmp_path: Path) -> None:
    token, runs = tmp_path / "token", tmp_path / "runs"
    token.write_text("first-value-aaaaaaaa")
    counting = python(
        "import pathlib, sys; pathlib.Path(sys.argv[2]).open('a').write('x'); "
        "print(pathlib.Path(sys.argv[1]).read_text())",
        str(token),
        str(runs),
    )
    credential = RotatingCredential(counting, ENTRY)
    value, generation = await credential.current()
    assert value == "first-value-aaaaaaaa"
    token.write_text("second-value-bbbbbbbb")
    renewed = await asyncio.gather(*(credential.refreshed(generation) for _ in range(8)))
    assert {value for value, _ in renewed} == {"second-value-bbbbbbbb"}
    assert runs.read_text() == "xx"
    assert credential.values_sent() == ["second-value-bbbbbbbb", "first-value-aaaaaaaa"]
    assert "value" not in repr(credential)


async def test_a_source_that_fails_at_renewal_keeps_the_value_it_had(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-value-aaaaaaaa")
    credential = RotatingCredential(CredentialSource(file=token), ENTRY)
    _, generation = await credential.current()
    token.unlink()
    with pytest.raises(CredentialError, match="does not exist"):
        await credential.refreshed(generation)
    assert await credential.current() == ("first-value-aaaaaaaa", generation)
