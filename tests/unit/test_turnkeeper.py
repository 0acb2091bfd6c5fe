"""The library's public surface: `turnkeeper.__all__`, every name in it and nothing else, none of
them hidden by a submodule of the same name. (The library driving real turns:
tests/test_library.py.)"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import turnkeeper


def test_the_public_surface_is_all_and_only_all() -> None:
    for name in turnkeeper.__all__:
        assert getattr(turnkeeper, name) is not None
    assert sorted(dir(turnkeeper)) == sorted(turnkeeper.__all__)
    with pytest.raises(AttributeError):
        _ = turnkeeper.build_activities  # internal: not re-exported
    assert turnkeeper.Agent.__name__ == "AgentSpec" and turnkeeper.Task.__name__ == "TaskSpec"
    # A submodule of the same name would replace the function once anything imports it.
    submodules = {info.name for info in pkgutil.iter_modules(turnkeeper.__path__)}
    assert not submodules & set(turnkeeper.__all__)
    importlib.import_module("turnkeeper.client.connection")
    assert callable(turnkeeper.connect)
