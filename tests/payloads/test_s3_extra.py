"""Without the `s3` extra the store modules still import and a local folder store opens: checked
in a fresh interpreter, the only place an import left behind would show (the S3 store itself is
tested in tests/unit/payloads/test_s3_store.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_store_modules_import_without_the_s3_extra(tmp_path: Path) -> None:
    blocked = ("aioboto3", "aiobotocore", "botocore", "boto3", "types_aiobotocore_s3")
    script = (
        f"import sys; sys.modules.update(dict.fromkeys({blocked!r}))\n"
        "from pathlib import Path\n"
        "from turnkeeper.payloads.stores import open_store\n"
        "import turnkeeper.client.connection, turnkeeper.worker.wiring\n"
        "from turnkeeper.worker.settings import Settings\n"
        f"p = Path({str(tmp_path)!r})\n"
        "from turnkeeper.payloads.keyring import Keyring\n"
        "print(type(open_store(Settings('q', p, p, p), Keyring())).__name__)\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "LocalFolderStore"
