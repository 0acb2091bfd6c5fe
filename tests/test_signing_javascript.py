"""The JavaScript the security page prints for signed approvals (docs/security.md), run by node
over docs/signing-vectors.json: a client copying it signs the same bytes as our code (the
vectors themselves are checked against our code in tests/unit/contracts/test_signing_vectors.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
VECTORS = json.loads((ROOT / "docs" / "signing-vectors.json").read_text(encoding="utf-8"))


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
