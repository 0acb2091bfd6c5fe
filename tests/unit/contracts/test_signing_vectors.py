"""docs/signing-vectors.json, the known answers that signers in other languages test against:
our code produces every byte of them, and so does the JavaScript the security page prints
(docs/security.md; run by node, when the machine has it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from turnkeeper.contracts.budget_extension import ExtendBudgetInput
from turnkeeper.contracts.decision_signing import (
    DECISION,
    Signature,
    input_digest,
    parse_expires_at,
    public_key_line,
    sign,
    signature_problem,
    signed_bytes,
)
from turnkeeper.contracts.signals import ApproveInput, SignedCall

ROOT = Path(__file__).parents[2]
VECTORS = json.loads((ROOT / "docs" / "signing-vectors.json").read_text(encoding="utf-8"))
KEY = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(VECTORS["private_key_seed_hex"]))


def vector_ids(vector: dict[str, Any]) -> str:
    return vector["name"]


def fields_from_payload(vector: dict[str, Any]) -> dict[str, Any]:
    """The signed fields as the product derives them from what a client sends."""
    workflow_id, agent_id = VECTORS["workflow_id"], VECTORS["agent_id"]
    if vector["kind"] == DECISION:
        call = SignedCall(workflow_id, agent_id, vector["call"]["tool"], vector["call"]["input"])
        return ApproveInput.model_validate(vector["payload"]).signed_fields(call)
    extension = ExtendBudgetInput.model_validate(vector["payload"])
    return extension.signed_fields(workflow_id, agent_id, vector["request"])


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=vector_ids)
def test_our_signer_gives_every_byte_of_the_vector(vector: dict[str, Any]) -> None:
    expected = bytes.fromhex(vector["signed_bytes_hex"])

    made = signed_bytes(vector["kind"], vector["fields"], vector["expires_at"])
    signature = sign(KEY, vector["kind"], vector["fields"], parse_expires_at(vector["expires_at"]))

    assert made == expected == vector["signed_text"].encode("utf-8")
    assert fields_from_payload(vector) == vector["fields"]
    assert signature == Signature(expires_at=vector["expires_at"], value=vector["signature"])
    if vector["kind"] == DECISION and vector["call"]["input"] is not None:
        assert input_digest(vector["call"]["input"]) == vector["fields"]["call_input_sha256"]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=vector_ids)
def test_our_verifier_accepts_the_vector_and_nothing_else(vector: dict[str, Any]) -> None:
    signature = Signature(expires_at=vector["expires_at"], value=vector["signature"])
    public = VECTORS["public_key"]
    before = parse_expires_at(vector["expires_at"]) - timedelta(days=1)

    assert public_key_line(KEY) == public
    assert signature_problem(vector["kind"], vector["fields"], signature, public, before) is None
    changed = {**vector["fields"], "approver": "mallory"}
    assert "does not verify" in str(
        signature_problem(vector["kind"], changed, signature, public, before)
    )


def documented_javascript() -> str:
    """The JavaScript of the security page's signed approvals section, as a client would copy
    it."""
    page = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```js\n(.*?)```", page, flags=re.DOTALL)
    [block] = [block for block in blocks if "function canonicalize" in block]
    return block


# Runs the security page's functions over every vector: the bytes, the input digest and the
# signature a JavaScript client would make with node's own Ed25519.
_HARNESS = """
const crypto = require("node:crypto");
const doc = JSON.parse(require("node:fs").readFileSync(process.argv[2], "utf8"));
const pkcs8 = Buffer.concat([
  Buffer.from("302e020100300506032b657004220420", "hex"),
  Buffer.from(doc.private_key_seed_hex, "hex"),
]);
const key = crypto.createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
const answers = doc.vectors.map((v) => {
  const bytes = signedBytes(v.kind, v.fields, v.expires_at);
  return {
    name: v.name,
    bytes: bytes.toString("hex"),
    digest: v.call && v.call.input ? inputDigest(v.call.input) : null,
    signature: crypto.sign(null, bytes, key).toString("base64"),
  };
});
console.log(JSON.stringify(answers));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed here")
def test_the_documented_javascript_signer_gives_the_same_bytes_and_signatures(
    tmp_path: Path,
) -> None:
    script = tmp_path / "sign.cjs"
    script.write_text(documented_javascript() + _HARNESS, encoding="utf-8")
    vectors_file = str(ROOT / "docs" / "signing-vectors.json")

    done = subprocess.run(
        ["node", str(script), vectors_file], capture_output=True, text=True, check=True
    )

    answers = {answer["name"]: answer for answer in json.loads(done.stdout)}
    for vector in VECTORS["vectors"]:
        answer = answers[vector["name"]]
        assert answer["bytes"] == vector["signed_bytes_hex"], vector["name"]
        assert answer["signature"] == vector["signature"], vector["name"]
        if answer["digest"] is not None:
            assert answer["digest"] == vector["fields"]["call_input_sha256"], vector["name"]
