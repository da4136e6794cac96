"""Protobuf wire-format varints, for the few places that write or read an encoding directly (the
verifier's annotations, the service's re-tagging of events, the client's requests)."""

from __future__ import annotations


def varint(value: int) -> bytes:
    """The base-128 varint encoding of a non-negative ``value``."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes | bytearray, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it (IndexError if ``data`` ends inside it)."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos
