"""A rotating bearer token in the MCP config (`bearer`): read once at load, so that a wrong
source stops the worker at start with the entry named, and never kept in the loaded config."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from turnkeeper.activities.credentials import CredentialSource
from turnkeeper.activities.mcp.config import HttpServerConfig, McpConfigError, load_mcp_config

SECRET = "tok-rotating-0123456789"


def load(tmp_path: Path, server: dict[str, Any]) -> HttpServerConfig:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": {"search": {"url": "http://h/mcp", **server}}}))
    loaded = load_mcp_config(path, {})
    search = loaded.servers["search"]
    assert isinstance(search, HttpServerConfig)
    return search


def load_error(tmp_path: Path, server: dict[str, Any]) -> str:
    with pytest.raises(McpConfigError) as raised:
        load(tmp_path, server)
    message = str(raised.value)
    assert message.startswith(f"MCP config {tmp_path / 'mcp.json'}: servers.search")
    assert SECRET not in message
    return message


def test_a_relative_token_file_is_taken_from_the_config_folder(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "search").write_text(SECRET)
    search = load(tmp_path, {"bearer": {"file": "secrets/search"}})
    assert search.bearer == CredentialSource(file=(tmp_path / "secrets" / "search").resolve())
    assert SECRET not in repr(search) + search.model_dump_json()


def test_a_missing_token_file_is_an_error_at_load(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"bearer": {"file": "absent"}})
    assert message.endswith(
        f"servers.search.bearer: file {str(tmp_path / 'absent')!r} does not exist"
    )


def test_a_token_command_that_fails_is_an_error_at_load(tmp_path: Path) -> None:
    command = [sys.executable, "-c", f"print({SECRET!r}); raise SystemExit(2)"]
    message = load_error(tmp_path, {"bearer": {"command": command}})
    assert "servers.search.bearer: command" in message and "exited with status 2" in message


def test_a_bearer_and_an_authorization_header_are_not_both_allowed(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(SECRET)
    message = load_error(
        tmp_path, {"bearer": {"file": "token"}, "headers": {"authorization": "Bearer x"}}
    )
    assert "has both 'bearer' and an Authorization header" in message


def test_a_bearer_needs_a_file_or_a_command(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"bearer": {"path": "token"}})
    assert "servers.search.bearer" in message


def test_a_stdio_server_has_no_bearer(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": {"s": {"command": ["x"], "bearer": {"file": "t"}}}}))
    with pytest.raises(McpConfigError, match=r"servers\.s\.bearer: unknown field"):
        load_mcp_config(path, {})


def test_a_token_commands_arguments_stay_out_of_the_config_repr(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "print('tok')", f"--password={SECRET}"]
    search = load(tmp_path, {"bearer": {"command": command}})
    assert search.bearer is not None and search.bearer.command == command
    assert SECRET not in repr(search)
