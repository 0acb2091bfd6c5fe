"""The MCP config file, the qualified tool names, and how MCP results become text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, EmbeddedResource, ImageContent, TextContent
from mcp.types import TextResourceContents as TextResource
from turnkeeper.activities.mcp.config import (
    HttpServerConfig,
    McpConfigError,
    StdioServerConfig,
    load_mcp_config,
)
from turnkeeper.activities.mcp.results import result_text
from turnkeeper.contracts.mcp import is_mcp_tool_name, qualified_name, split_qualified_name

from turnkeeper.worker.settings import Settings


def write_config(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def config_error(tmp_path: Path, content: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(McpConfigError) as raised:
        load_mcp_config(write_config(tmp_path, content), environ or {})
    return str(raised.value)


def test_a_config_with_a_stdio_and_an_http_server(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {
            "servers": {
                "files": {"command": ["python", "-m", "x"], "env": {"ROOT": "${HOME}"}, "cwd": "w"},
                "search": {
                    "url": "http://127.0.0.1:8000/mcp",
                    "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
                    "timeout_s": 5,
                },
            }
        },
    )
    environ = {"HOME": "/home/me", "SEARCH_TOKEN": "tok-123"}
    config = load_mcp_config(path, environ)
    files, search = config.servers["files"], config.servers["search"]
    assert isinstance(files, StdioServerConfig)
    assert files.command == ["python", "-m", "x"]
    assert files.cwd == (tmp_path / "w").resolve()
    assert files.resolved_env(environ) == {"ROOT": "/home/me"}
    assert isinstance(search, HttpServerConfig)
    assert search.timeout_s == 5
    assert search.resolved_headers(environ) == {"Authorization": "Bearer tok-123"}
    # The secret is substituted only when connecting: the loaded config never holds it.
    assert "tok-123" not in repr(config) + config.model_dump_json()


def test_no_config_file_means_no_servers() -> None:
    assert load_mcp_config(None, {}).servers == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ({"servers": []}, "servers: must be an object"),
        ({"servers": {}, "extra": 1}, 'must be one object {"servers"'),
        ({"servers": {"Files": {"command": ["x"]}}}, "servers.Files: MCP server name 'Files'"),
        ({"servers": {"a__b": {"command": ["x"]}}}, "must not contain '__'"),
        ({"servers": {"s": {}}}, "servers.s: needs exactly one of 'command'"),
        ({"servers": {"s": {"command": ["x"], "url": "http://h"}}}, "needs exactly one of"),
        ({"servers": {"s": {"command": []}}}, "servers.s.command: List should have at least 1"),
        ({"servers": {"s": {"url": "ftp://h"}}}, "servers.s.url: Value error, must start with"),
        ({"servers": {"s": {"url": "http://h", "header": {}}}}, "servers.s.header: unknown field"),
        ({"servers": {"s": {"command": ["x"], "timeout_s": 0}}}, "servers.s.timeout_s:"),
        ({"servers": {"s": {"url": "http://h", "headers": {"A": 1}}}}, "servers.s.headers.A:"),
        ({"servers": {"s": {"command": ["x"], "name": "t"}}}, "servers.s.name: not allowed"),
    ],
)
def test_a_bad_config_names_the_file_and_the_field(
    tmp_path: Path, content: Any, message: str
) -> None:
    error = config_error(tmp_path, content)
    assert error.startswith(f"MCP config {tmp_path / 'mcp.json'}")
    assert message in error


def test_a_header_that_refers_to_a_missing_variable_is_refused_at_load(tmp_path: Path) -> None:
    content = {"servers": {"s": {"url": "http://h", "headers": {"X-Key": "${NOPE}"}}}}
    error = config_error(tmp_path, content)
    assert "servers.s.headers.X-Key: ${NOPE} is not set in the worker's environment" in error


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="does not exist"):
        load_mcp_config(tmp_path / "absent.json", {})


def test_settings_read_the_config_path_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env({"TURNKEEPER_MCP_CONFIG": str(tmp_path / "mcp.json")})
    assert settings.mcp_config == tmp_path / "mcp.json"
    assert Settings.from_env({}).mcp_config is None


def test_qualified_names_are_sanitised_and_split_back() -> None:
    assert qualified_name("files", "read") == "mcp__files__read"
    assert qualified_name("web-1", "search.v2 beta") == "mcp__web-1__search_v2_beta"
    assert split_qualified_name("mcp__web-1__search_v2_beta") == ("web-1", "search_v2_beta")
    assert split_qualified_name("mcp__s__a__b") == ("s", "a__b")
    assert is_mcp_tool_name("mcp__s__a")
    assert not is_mcp_tool_name("read_file")


@pytest.mark.parametrize("name", ["read_file", "mcp__", "mcp__server", "mcp____tool", "mcp__s__"])
def test_a_name_that_is_not_qualified_does_not_split(name: str) -> None:
    with pytest.raises(ValueError, match="not an MCP tool name"):
        split_qualified_name(name)


def test_a_name_that_cannot_fit_fails_loudly() -> None:
    with pytest.raises(ValueError, match="more than the 64 the model API allows"):
        qualified_name("server", "t" * 60)
    with pytest.raises(ValueError, match="must match"):
        qualified_name("Server", "t")
    with pytest.raises(ValueError, match="at most 56"):
        qualified_name("s" * 57, "t")
    assert len(qualified_name("s" * 56, "t")) == 64


def test_text_json_and_binary_content_become_text() -> None:
    pretty = TextContent(text='{\n  "a": [1, 2],\n  "b": "é"\n}')
    assert result_text("t", CallToolResult(content=[pretty])) == ('{"a":[1,2],"b":"é"}', False)
    structured_only = CallToolResult(content=[], structured_content={"n": 1})
    assert result_text("t", structured_only) == ('{"n":1}', False)
    resource = EmbeddedResource(resource=TextResource(uri="file:///a.txt", text="inside"))
    assert result_text("t", CallToolResult(content=[resource])) == ("inside", False)
    error = CallToolResult(content=[TextContent(text="no such row")], is_error=True)
    assert result_text("t", error) == ("no such row", True)
    image = ImageContent(data="AAAA", mime_type="image/png")
    text, is_error = result_text("t", CallToolResult(content=[image]))
    assert is_error
    assert text == ("[MCP tool 't' returned image (image/png), which cannot be shown to the model]")
