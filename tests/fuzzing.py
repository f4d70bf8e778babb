"""Helpers shared by the property tests that throw damaged bytes at decoders."""

from __future__ import annotations


def mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply (kind, position, byte) edits: 0 overwrites a byte, 1 inserts, 2 deletes."""
    buf = bytearray(data)
    for kind, pos, value in edits:
        if kind == 1 or not buf:
            buf.insert(pos % (len(buf) + 1), value)
        elif kind == 0:
            buf[pos % len(buf)] = value
        else:
            del buf[pos % len(buf)]
    return bytes(buf)
