"""The YAML front matter of a `SKILL.md`, read within bounds that a hostile file cannot stretch.

A skills folder may come from anywhere (a shared repository, a download), and the worker reads
it at start. Plain `yaml.safe_load` lets a few hundred bytes expand without bound through
aliases (the "billion laughs"), and lets deep nesting exhaust Python's recursion: either hangs or
kills the worker before it serves anything. Front matter needs none of that, so it is refused:

- more than `MAX_FRONT_MATTER_BYTES` of front matter;
- any anchor (`&a`) or alias (`*a`), refused as the parser meets it, before anything expands;
- nesting deeper than `MAX_DEPTH`.
"""

from __future__ import annotations

from typing import Any, Final

import yaml
from yaml.events import AliasEvent, NodeEvent
from yaml.nodes import Node

# Far above any real front matter (a name, a description, a list of tools: well under 4 KiB),
# and small enough that PyYAML reads it in milliseconds.
MAX_FRONT_MATTER_BYTES: Final = 64 * 1024
MAX_DEPTH: Final = 32


class FrontMatterRefused(Exception):
    """Front matter that is well-formed YAML but outside the bounds above; the message says
    which bound."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that stops at the first anchor or alias, and below `MAX_DEPTH` levels.

    The check sits in `compose_node`, which sees each node's first event before the node is
    built: an alias is refused before it is resolved, so nothing is ever copied.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            raise FrontMatterRefused(f"uses the YAML alias *{event.anchor}")
        if isinstance(event, NodeEvent) and event.anchor is not None:
            raise FrontMatterRefused(f"uses the YAML anchor &{event.anchor}")
        if self._depth >= MAX_DEPTH:
            raise FrontMatterRefused(f"nests deeper than {MAX_DEPTH} levels")
        self._depth += 1
        try:
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1


def load_front_matter(text: str) -> Any:
    """The value of the YAML document `text` (the lines between the `---` fences).

    Raises:
        FrontMatterRefused: Over `MAX_FRONT_MATTER_BYTES`, an anchor or alias, or too deep.
        yaml.YAMLError: Not valid YAML.
    """
    size = len(text.encode("utf-8"))
    if size > MAX_FRONT_MATTER_BYTES:
        raise FrontMatterRefused(
            f"is {size} bytes, over the limit of {MAX_FRONT_MATTER_BYTES} bytes"
        )
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
