"""The support example's refund tool, called as the worker calls it: a retried call refunds once,
and no refund goes above the order's total. (The example's programs against a server:
tests/test_examples.py.)"""

from __future__ import annotations

import pytest

from tests.conftest import new_key
from turnkeeper import ToolContext, ToolError


async def test_a_retried_refund_refunds_once_and_never_above_the_total() -> None:
    from examples.support.tools import refund

    call = ToolContext(turn_id=f"turn-{new_key()}", call_id="toolu_1", attempt=1)
    retried = ToolContext(turn_id=call.turn_id, call_id=call.call_id, attempt=2)

    first = await refund.function("1043", 10.0, call)
    again = await refund.function("1043", 10.0, retried)

    assert again == first
    with pytest.raises(ToolError, match=r"at most its total, 40\.00 USD"):
        await refund.function("1043", 40.01, ToolContext(turn_id=call.turn_id, call_id="toolu_2"))
