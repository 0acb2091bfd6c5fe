"""The token file: only hashes stored, tokens identify, revoke takes effect in a running server,
and failed sign-ins are limited per address."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.unit.http.fake_turns import FakeTurns
from turnkeeper.console.cli import app
from turnkeeper.http.app import create_app
from turnkeeper.http.auth import FailedSignIns, sign_in
from turnkeeper.http.tokens import TokenFileError, TokenStore
from turnkeeper.http.turns import ApiError


def test_the_file_keeps_the_hash_never_the_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = TokenStore(path).add("alice")
    text = path.read_text()
    assert token not in text
    assert len(token) > 40 and token.startswith("tk_")
    assert path.stat().st_mode & 0o077 == 0
    assert TokenStore(path).identify(token).name == "alice"
    assert TokenStore(path).identify(token + "x") is None


def test_a_revoke_from_another_process_reaches_a_running_store(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    serving = TokenStore(path)
    token = TokenStore(path).add("bob")
    assert serving.identify(token).name == "bob"
    TokenStore(path).revoke("bob")
    assert serving.identify(token) is None


def test_bad_names_and_files_are_said(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    with pytest.raises(TokenFileError, match="no identity 'carol'"):
        TokenStore(path).revoke("carol")
    with pytest.raises(TokenFileError, match="needs a name"):
        TokenStore(path).add(" ")
    with pytest.raises(TokenFileError, match="--key: no file"):
        TokenStore(path).add("dave", tmp_path / "missing")
    path.write_text(json.dumps({"nothing": []}))
    with pytest.raises(TokenFileError, match="not a token file"):
        TokenStore(path)


def test_failed_sign_ins_are_limited_per_address(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token = store.add("alice")
    failures = FailedSignIns(limit=3, window_s=60)
    for _ in range(3):
        with pytest.raises(ApiError) as refused:
            sign_in(store, failures, "Bearer wrong", "10.0.0.1")
        assert refused.value.status == 401
    for wrong in ("Bearer wrong", None):
        with pytest.raises(ApiError) as limited:
            sign_in(store, failures, wrong, "10.0.0.1")
        assert limited.value.status == 429
    # Only failures are limited: a valid token signs in from the limited address too.
    assert sign_in(store, failures, f"Bearer {token}", "10.0.0.1").name == "alice"
    with pytest.raises(ApiError) as other:
        sign_in(store, failures, "Bearer wrong", "10.0.0.2")
    assert other.value.status == 401


def test_the_tokens_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    file = str(tmp_path / "tokens.json")
    added = runner.invoke(app, ["tokens", "add", "alice", "--file", file])
    assert added.exit_code == 0, added.output
    token = added.output.strip().splitlines()[-1]
    assert TokenStore(Path(file)).identify(token).name == "alice"
    listed = runner.invoke(app, ["tokens", "list", "--file", file])
    assert "alice" in listed.output and token not in listed.output
    assert runner.invoke(app, ["tokens", "revoke", "alice", "--file", file]).exit_code == 0
    assert TokenStore(Path(file)).identify(token) is None
    for wrong in (
        ["tokens", "revoke", "alice", "--file", file],
        ["tokens", "add", "bob", "--file", file, "--key", str(tmp_path / "nokey")],
        ["serve", "--tokens", str(tmp_path / "broken.json")],
    ):
        (tmp_path / "broken.json").write_text("not json")
        refused = runner.invoke(app, wrong)
        assert refused.exit_code == 2, (wrong, refused.output)
        assert "error:" in refused.output


def test_a_limited_address_is_told_when_to_retry(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    http = TestClient(create_app(FakeTurns(), store, failures=FailedSignIns(limit=2)))
    for _ in range(2):
        assert http.get("/v1/approvals", headers={"Authorization": "Bearer x"}).status_code == 401
    limited = http.get("/v1/approvals", headers={"Authorization": "Bearer x"})
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0


def test_roles_and_tenants_are_kept_and_an_old_file_reads_as_members(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = TokenStore(path)
    ops = store.add("olga", role="operator")
    member = store.add("mia", tenant="acme")
    assert (store.identify(ops).role, store.identify(ops).is_operator) == ("operator", True)
    assert (store.identify(member).role, store.identify(member).tenant) == ("member", "acme")
    old = {"identities": [{"name": "ann", "token_sha256": "00" * 32, "created": "2026-01-01"}]}
    path.write_text(json.dumps(old))
    [ann] = TokenStore(path).identities()
    assert (ann.role, ann.tenant, ann.is_operator) == ("member", None, False)


def test_a_role_tenant_or_name_that_is_not_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    with pytest.raises(TokenFileError, match="'admin' is not a role"):
        TokenStore(path).add("alice", role="admin")
    with pytest.raises(TokenFileError, match="--tenant: 'a b' is not a tenant name"):
        TokenStore(path).add("alice", tenant="a b")
    with pytest.raises(TokenFileError, match="no quotes"):
        TokenStore(path).add("o'brien")
    # A hand-edited file grants no role nobody can give.
    entry = {"name": "eve", "token_sha256": "00" * 32, "role": "root"}
    path.write_text(json.dumps({"identities": [entry]}))
    with pytest.raises(TokenFileError, match="identity 'eve': --role: 'root' is not a role"):
        TokenStore(path)


def test_tokens_add_gives_a_role_and_a_tenant_and_list_shows_them(tmp_path: Path) -> None:
    runner = CliRunner()
    file = str(tmp_path / "tokens.json")
    for arguments in (["olga", "--role", "operator"], ["mia", "--tenant", "acme"], ["ann"]):
        added = runner.invoke(app, ["tokens", "add", *arguments, "--file", file])
        assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["tokens", "list", "--file", file]).output.splitlines()
    assert [line.split("  created")[0] for line in listed] == [
        "ann  member  no tenant",
        "mia  member  tenant acme",
        "olga  operator  no tenant",
    ]
    for wrong in (["bob", "--role", "boss"], ["bob", "--tenant", "no/slash"]):
        refused = runner.invoke(app, ["tokens", "add", *wrong, "--file", file])
        assert refused.exit_code == 2 and "error:" in refused.output, refused.output
