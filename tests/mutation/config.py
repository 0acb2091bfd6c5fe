"""modules.toml: the modules under the mutation check, each with the score it must keep, the
tests that kill its mutants first, and its equivalent mutants."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

CONFIG_FILE: Final = Path(__file__).with_name("modules.toml")


@dataclass(frozen=True)
class Equivalent:
    """A mutant that behaves as the original for every input a user can give: not counted.
    Matched by the changed lines' text, so that it survives code moving around it."""

    before: str
    after: str
    why: str


@dataclass(frozen=True)
class Module:
    path: str
    threshold: float  # percent of the counted mutants that the fast tier must kill
    tests: list[str]  # run first: they kill most mutants in a fraction of the fast tier's time
    equivalent: list[Equivalent]


@dataclass(frozen=True)
class Config:
    fast_tier: list[str]
    modules: dict[str, Module]


def load(path: Path = CONFIG_FILE) -> Config:
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    modules = {name: _module(name, entry) for name, entry in raw["modules"].items()}
    return Config(fast_tier=list(raw["fast_tier"]), modules=modules)


def _module(path: str, entry: dict[str, Any]) -> Module:
    return Module(
        path=path,
        threshold=float(entry["threshold"]),
        tests=list(entry.get("tests", [])),
        equivalent=[Equivalent(**item) for item in entry.get("equivalent", [])],
    )
