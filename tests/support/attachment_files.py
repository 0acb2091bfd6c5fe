"""Files a turn attaches, made for the test: a PNG of a given size whose header is real (the
fakes read its width and height to bill it), a one-page PDF."""

from __future__ import annotations

import os
import struct
import zlib


def png_of(size: int, width: int = 800, height: int = 600) -> bytes:
    """A PNG of exactly `size` bytes: a real signature and IHDR, then a chunk of random bytes
    (fresh bytes each call, so that no two tests share a stored object)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    head = b"\x89PNG\r\n\x1a\n" + chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    )
    tail = chunk(b"IEND", b"")
    filler = size - len(head) - len(tail) - 12
    return head + chunk(b"tEXt", os.urandom(filler)) + tail


def pdf_of(text: str = "Invoice 42: 120.00 EUR") -> bytes:
    """A one-page PDF whose page shows `text`."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    return (
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
        b"3 0 obj << /Type /Page /Parent 2 0 R /Contents 4 0 R >> endobj\n"
        + f"4 0 obj << /Length {len(stream)} >> stream\n".encode()
        + stream
        + b"\nendstream endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
    )
