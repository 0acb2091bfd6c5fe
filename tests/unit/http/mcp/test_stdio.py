"""Who `turnkeeper mcp --as NAME [--tokens FILE]` calls as (docs/mcp-serve.md, Over stdio)."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnkeeper.http.mcp.stdio import local_identity
from turnkeeper.http.tokens import TokenFileError, TokenStore


def test_the_identity_is_the_token_files_or_a_local_operator(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    TokenStore(tokens).add("carol", tenant="acme")

    carol = local_identity("carol", tokens)
    dave = local_identity("dave", None)

    assert (carol.name, carol.role, carol.tenant) == ("carol", "member", "acme")
    assert (dave.name, dave.role, dave.tenant) == ("dave", "operator", None)
    with pytest.raises(
        TokenFileError, match=r"--as: no identity 'dave' in .*\(identities: carol\)"
    ):
        local_identity("dave", tokens)
    with pytest.raises(TokenFileError, match=r"--as: .* no quotes"):
        local_identity("o'brien", None)
