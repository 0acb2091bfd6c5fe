"""The mutation operator cosmic-ray lacks: augmented assignment. Budgets add up extensions with
`+=`; a sum that keeps only the last term (`+=` turned into `=`) is exactly the defect a test of
two extensions must catch, and cosmic-ray's binary-operator replacement never touches `+=`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import cosmic_ray.plugins
from cosmic_ray.operators.operator import Example, Operator

PROVIDER: Final = "turnkeeper"

# Each augmented operator's arithmetic counterpart (`+=` <-> `-=`), as for binary operators.
_COUNTERPARTS: Final = {"+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "//=": "*=", "%=": "*="}

Position = tuple[tuple[int, int], tuple[int, int]]


class ReplaceAugmentedAssignment(Operator):
    """`x += y` becomes `x = y` (the first mutation) and `x -= y` (the second)."""

    def mutation_positions(self, node: Any) -> Iterator[Position]:
        if _is_augmented(node):
            yield (node.start_pos, node.end_pos)
            if node.value in _COUNTERPARTS:
                yield (node.start_pos, node.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        node.value = "=" if index == 0 else _COUNTERPARTS[node.value]
        return node

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (
            Example("x += y", "x = y"),
            Example("x += y", "x -= y", occurrence=1),
        )


def _is_augmented(node: Any) -> bool:
    return (
        node.type == "operator"
        and node.value.endswith("=")
        and node.value not in ("=", "==", "!=", "<=", ">=", ":=")
        and node.parent is not None
        and node.parent.type == "expr_stmt"
    )


class _Provider:
    """A cosmic-ray operator provider, the interface its plugins implement."""

    _operators: Final = {"ReplaceAugmentedAssignment": ReplaceAugmentedAssignment}

    def __iter__(self) -> Iterator[str]:
        return iter(self._operators)

    def __getitem__(self, name: str) -> type[Operator]:
        return self._operators[name]


def register() -> None:
    """Adds our operators to cosmic-ray's providers, in this process only: an entry point would
    have to be declared by an installed distribution, and ours is the product's."""
    cosmic_ray.plugins.OPERATOR_PROVIDERS.setdefault(PROVIDER, _Provider())
