"""The defaults of `turnkeeper serve`'s options, apart from the server itself: the console
shows them in `--help` without importing the HTTP stack (FastAPI, the MCP and A2A SDKs: seconds
of start-up every `turnkeeper` command would pay)."""

from __future__ import annotations

from typing import Final

SERVE_HOST: Final = "127.0.0.1"
SERVE_PORT: Final = 8787
