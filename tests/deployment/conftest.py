"""A dev server of their own for the deployment tests, with drainage checked every second
(the server's default is minutes) and continue-as-new suggested early: the whole session shares
the other one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES

from tests.conftest import SA_KEYS, temporal_binary
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter

# The server re-checks a draining version every few minutes by default; a test cannot wait that.
FAST_DRAINAGE = [
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
    # Continue-as-new suggested after 80 history events (default: thousands), so that a long turn
    # crosses runs within a test; the upgrade test's turns stay far below it.
    "--dynamic-config-value",
    "limit.historyCount.suggestContinueAsNew=80",
]


@pytest.fixture(scope="package")
async def versioned_env(
    payload_store: ContentStore, keyring: Keyring
) -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        data_converter=turn_data_converter(payload_store, keyring),
        dev_server_existing_path=temporal_binary("temporal"),
        search_attributes=[SA_KEYS[kind](name) for name, kind in SEARCH_ATTRIBUTES.items()],
        dev_server_extra_args=FAST_DRAINAGE,
    )
    async with env:
        yield env
