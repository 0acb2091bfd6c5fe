"""malloc'd bytes as glibc counts them: what protobuf's upb arenas, the SDK's Rust core and
pydantic-core hold, which Python's own allocator statistics do not see."""

from __future__ import annotations

import ctypes
import gc

from temporalio.converter import default as default_converter


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost",
        )
    ]  # fmt: skip


def malloc_in_use() -> int:
    """Bytes glibc's malloc has handed out and not had back (all arenas, mmapped blocks too):
    native allocations (the SDK's Rust core, protobuf's upb arenas, pydantic-core) and the
    Python objects too large for pymalloc, whose own 256 KiB arenas are mmapped outside it."""
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


def payload_malloc_bytes(count: int = 2000) -> int:
    """malloc'd bytes that one small standalone `Payload` holds (a workflow stream item is one):
    with protobuf's upb backend each message made on its own owns an arena of its own."""
    converter = default_converter().payload_converter
    gc.collect()
    before = malloc_in_use()
    kept = [converter.to_payloads([{"kind": "iteration_started", "n": i}])[0] for i in range(count)]
    gc.collect()
    size = (malloc_in_use() - before) // len(kept)
    del kept
    return size
