"""`TurnTestEnvironment`'s refusals that need no server: options that contradict each other, a
turn with no model, two scripted models under one name, a property read outside `async with`."""

from __future__ import annotations

import pytest

from turnkeeper.testing import ScriptedModel, TurnTestEnvironment, reply
from turnkeeper.testing.scripted_model import ScriptedProvider


def test_a_time_skipping_environment_takes_no_address() -> None:
    with pytest.raises(ValueError, match="time_skipping starts a test server of its own"):
        TurnTestEnvironment(time_skipping=True, address="localhost:7233")


async def test_a_turn_without_a_model_names_where_to_give_one() -> None:
    with pytest.raises(ValueError, match=r"no model: give TurnTestEnvironment\(model="):
        await TurnTestEnvironment().start_turn("hello")


def test_the_client_outside_async_with_says_so() -> None:
    with pytest.raises(RuntimeError, match="use it in `async with`"):
        _ = TurnTestEnvironment().client


def test_two_scripted_models_cannot_share_a_name() -> None:
    provider = ScriptedProvider()
    assert provider.add(ScriptedModel([reply("a")], name="support")) == "scripted:support"
    assert provider.add(ScriptedModel([reply("b")])) == "scripted:model-2"
    with pytest.raises(ValueError, match="two ScriptedModels are named 'support'"):
        provider.add(ScriptedModel([reply("c")], name="support"))
