"""The worker's remote A2A agents (`TURNKEEPER_A2A_CONFIG`): a wrong file stops the worker at
start with the file and the field named, and no secret is kept in or printed from the config."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from turnkeeper.activities.a2a.config import A2aAgentConfig, A2aConfigError, load_a2a_config

SECRET = "tok-a2a-0123456789"


def write(tmp_path: Path, agents: Any) -> Path:
    path = tmp_path / "a2a.json"
    path.write_text(json.dumps({"agents": agents}))
    return path


def load_error(tmp_path: Path, agents: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(A2aConfigError) as raised:
        load_a2a_config(write(tmp_path, agents), environ or {})
    message = str(raised.value)
    assert message.startswith(f"A2A config {tmp_path / 'a2a.json'}: ")
    assert SECRET not in message
    return message


def test_an_agent_has_a_url_timeouts_and_a_card_location(tmp_path: Path) -> None:
    agents = {
        "research": {"url": "https://r.example/", "timeout_s": 900},
        "pricing": {"url": "http://p.example:9/cards/pricing.json"},
    }
    config = load_a2a_config(write(tmp_path, agents), {})
    research, pricing = config.agents["research"], config.agents["pricing"]
    assert research.timeout_s == 900 and research.request_timeout_s == 30
    assert research.card_location() == ("https://r.example/", None)
    assert pricing.card_location() == ("http://p.example:9/cards", "pricing.json")


def test_no_file_is_no_agents() -> None:
    assert load_a2a_config(None, {}).agents == {}


@pytest.mark.parametrize(
    ("agents", "said"),
    [
        (
            {"r": {"url": "ftp://x"}},
            "agents.r.url: Value error, must start with http:// or https://",
        ),
        ({"r": {"url": "http://x", "retries": 3}}, "agents.r.retries: unknown field"),
        ({"r": {}}, "agents.r.url: Field required"),
        ({"r": {"url": "http://x", "timeout_s": 0}}, "agents.r.timeout_s: Input should be greater"),
        ({"no spaces": {"url": "http://x"}}, "agents.no spaces: the name must be a tool name"),
        ({"r": "http://x"}, "agents.r: must be an object"),
        ({"r": {"url": "http://x", "name": "s"}}, "agents.r: must be an object"),
    ],
)
def test_a_wrong_field_is_named(tmp_path: Path, agents: Any, said: str) -> None:
    assert said in load_error(tmp_path, agents)


def test_a_file_that_is_not_the_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a2a.json"
    path.write_text(json.dumps({"servers": {}}))
    with pytest.raises(A2aConfigError, match=re.escape('must be one object {"agents"')):
        load_a2a_config(path, {})


def test_a_header_names_the_environment_and_keeps_the_reference(tmp_path: Path) -> None:
    agents = {"r": {"url": "http://x", "headers": {"X-Key": "${R_KEY}"}}}
    config = load_a2a_config(write(tmp_path, agents), {"R_KEY": SECRET})
    agent = config.agents["r"]
    assert agent.headers == {"X-Key": "${R_KEY}"} and SECRET not in repr(config)
    assert agent.resolved_headers({"R_KEY": SECRET}) == {"X-Key": SECRET}
    assert "agents.r.headers.X-Key: ${R_KEY} is not set" in load_error(tmp_path, agents)


def test_a_token_file_is_read_once_at_load_and_not_kept(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(SECRET)
    config = load_a2a_config(
        write(tmp_path, {"r": {"url": "http://x", "bearer": {"file": "token"}}}), {}
    )
    agent: A2aAgentConfig = config.agents["r"]
    assert agent.bearer is not None and agent.bearer.file == (tmp_path / "token").resolve()
    assert SECRET not in repr(config) and SECRET not in agent.model_dump_json()


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ({"bearer": {"file": "missing"}}, "agents.r.bearer: file"),
        (
            {"bearer": {"file": "token"}, "headers": {"authorization": "Bearer x"}},
            "has both 'bearer' and an Authorization header",
        ),
    ],
)
def test_a_token_source_that_cannot_work_stops_the_worker(
    tmp_path: Path, agent: dict[str, Any], said: str
) -> None:
    (tmp_path / "token").write_text(SECRET)
    assert said in load_error(tmp_path, {"r": {"url": "http://x", **agent}})
