"""Protobuf wire-format varints, for the few places that write an encoding directly (the verifier's
annotations, a live answer's counts). Re-tagging runs of fields is done by protobuf's own parser instead
(sgsverify/internal/wire_views.proto)."""

from __future__ import annotations


def varint(value: int) -> bytes:
    """The base-128 varint encoding of a non-negative ``value``."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
