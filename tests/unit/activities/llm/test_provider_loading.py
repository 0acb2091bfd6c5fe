"""A worker loads the Anthropic SDK when it first calls Claude, not when it starts."""

import subprocess
import sys

# A fresh interpreter: the test process has long imported `anthropic` for other tests.
_PROBE = """
import asyncio, sys
from turnkeeper.activities.providers.endpoints import default_providers
from turnkeeper.activities.providers.provider import ModelRequest
from turnkeeper.contracts.messages import Message

providers = default_providers({})
print("probe", "anthropic" in sys.modules)
request = ModelRequest(
    model="claude-sonnet-4-6", system="", max_tokens=8,
    messages=[Message.model_validate({"role": "user", "content": "hi"})],
)
print("probe", asyncio.run(providers["anthropic"].count_input_tokens(request)) > 0)
print("probe", "anthropic" in sys.modules)
"""


def test_the_anthropic_sdk_is_imported_at_the_first_call() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "k", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    probes = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("probe ")]
    assert probes == ["False", "True", "True"]
