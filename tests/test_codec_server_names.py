"""`turnkeeper codec-server`, run as the process a user starts, serves the host names it is given
with `--allowed-host` and refuses the rest (the guard itself is tested in-process in
tests/unit/devtools/test_codec_server.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from temporalio.api.common.v1 import Payload

from tests.conftest import temporal_binary
from tests.support.codec_client import Codec
from tests.support.encrypted_stack import OLD_KEY


async def test_turnkeeper_codec_server_serves_the_names_it_is_given(tmp_path: Path) -> None:
    command = [
        temporal_binary("turnkeeper"), "codec-server", "--port", "0", "--allowed-host", "codec.lan",
    ]  # fmt: skip
    environment = {
        "PATH": os.environ["PATH"],
        "TURNKEEPER_ENCRYPTION_KEYS": OLD_KEY,
        "TURNKEEPER_DATA_DIR": str(tmp_path),
    }
    process = await asyncio.create_subprocess_exec(
        *command, env=environment, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        url = first.decode().split()[3]  # "codec server on http://127.0.0.1:PORT · …"
        codec = Codec(url, tmp_path, Payload(metadata={"encoding": b"binary/null"}))
        assert (await codec.decode([codec.encrypted], Host="codec.lan"))[0] == 200
        assert (await codec.decode([codec.encrypted], Host=f"localhost:{codec.port}"))[0] == 200
        assert (await codec.decode([codec.encrypted], Host="codec.lan.attacker.example"))[0] == 403
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)
