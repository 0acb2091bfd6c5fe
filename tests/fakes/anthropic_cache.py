"""The fake Anthropic API's prompt cache, reporting usage as the API documents it.

The request is read as one sequence of blocks, in the API's cache order: tools, system, then
every message's content blocks. A block with `cache_control` is a breakpoint; the prefix up to
it is written to the cache when it reaches the model's minimum cacheable length (1,024 tokens
for Sonnet and Opus). A request reads the longest prefix, ending at one of its breakpoints,
that an earlier request wrote. Then, as the API reports it:

    cache_read_input_tokens      the prefix read from the cache
    cache_creation_input_tokens  from there up to the last breakpoint (written now)
    input_tokens                 the rest, after the last breakpoint

and the three add up to every input token of the request.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.fakes.anthropic_replies import JsonDict, estimate_tokens
from tests.fakes.attachment_checks import attachment_tokens

MAX_BREAKPOINTS = 4
MIN_CACHEABLE_TOKENS = 1024


class PromptCache:
    def __init__(self, min_tokens: int = MIN_CACHEABLE_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._prefixes: set[str] = set()

    def usage(self, body: JsonDict) -> dict[str, int]:
        """The request's input usage; caches the prefixes its breakpoints end."""
        total_chars, breakpoints = _breakpoints(body)
        total = estimate_tokens(total_chars)
        if not breakpoints:
            return {"input_tokens": total}
        read = max(
            (estimate_tokens(chars) for chars, digest in breakpoints if digest in self._prefixes),
            default=0,
        )
        last = estimate_tokens(breakpoints[-1][0])
        for chars, digest in breakpoints:
            if estimate_tokens(chars) >= self.min_tokens:
                self._prefixes.add(digest)
        written = last - read if last >= self.min_tokens else 0
        return {
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "input_tokens": total - read - written,
        }


def count_breakpoints(body: JsonDict) -> int:
    return sum(1 for block in _blocks(body) if _is_breakpoint(block))


def _breakpoints(body: JsonDict) -> tuple[int, list[tuple[int, str]]]:
    """Characters of the whole input, and (characters, digest) of each breakpoint's prefix."""
    digest = hashlib.sha256()
    chars = 0
    found = []
    for block in _blocks(body):
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        digest.update(json.dumps(plain, sort_keys=True).encode())
        chars += len(json.dumps(plain)) if "name" in plain else _text_chars(plain)
        if _is_breakpoint(block):
            found.append((chars, digest.copy().hexdigest()))
    return chars, found


def _blocks(body: JsonDict) -> list[JsonDict]:
    blocks: list[JsonDict] = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks += [b for b in system if isinstance(b, dict)]
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks += [b for b in content if isinstance(b, dict)]
    return blocks


def _is_breakpoint(block: JsonDict) -> bool:
    return isinstance(block.get("cache_control"), dict)


def _text_chars(block: JsonDict) -> int:
    if block.get("type") in ("image", "document"):
        return 4 * attachment_tokens(block)  # its billed tokens, as characters
    content: Any = block.get("text", block.get("content", block.get("input", "")))
    if isinstance(content, str):
        return len(content)
    if block.get("type") == "tool_result" and isinstance(content, list):
        return sum(_text_chars(part) for part in content if isinstance(part, dict))
    return len(json.dumps(content))
