"""A tenant-ledger ask that times out (turnkeeper/ground/tenant_ledger.py) raises the SDK's
timeout error and leaves no unread failure behind: asyncio logs each one at error level, and a
system test's worker log counts every such line as a broken turn."""

from __future__ import annotations

import asyncio
import gc
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import Client, RPCTimeoutOrCancelledError
from turnkeeper.contracts.tenants import UPDATE_SET_CAPS, SetCapsInput, TenantCaps, TenantSpend

from turnkeeper.ground import tenant_ledger


async def test_a_timed_out_ask_leaves_no_unread_failure(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    unread: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unread.append(context))
    monkeypatch.setattr(tenant_ledger, "RPC_TIMEOUT", timedelta(microseconds=1))
    tenant = f"t{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(RPCTimeoutOrCancelledError):
            await tenant_ledger.ledger_update(
                client,
                tenant,
                f"nobody-{tenant}",
                UPDATE_SET_CAPS,
                SetCapsInput(tenant=tenant, caps=TenantCaps()),
                TenantSpend,
            )
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in unread] == []
