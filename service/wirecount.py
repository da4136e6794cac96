"""Counting a request's events on the wire, before it is parsed (issue 27, item 4).

A parsed event costs protobuf far more than its encoding: an empty event is 2 bytes on the wire and about
40 in memory, so a 15 MiB VerifyLog of 8.4 M empty events grew the server by ~340 MiB before the event limit
refused it. Here the encoding's fields are walked — tag, length, skip; no event is parsed — and the walk
stops as soon as the count is over the limit, so it costs at most ``limit`` steps whatever the message.
"""

from __future__ import annotations

# Field numbers: VerifyLogRequest.log = 1, GameLog.events = 2, UploadLogRequest / VerifyLiveRequest.events = 3.
VERIFY_LOG_LOG = 1
GAME_LOG_EVENTS = 2
STREAM_EVENTS = 3


class WireError(ValueError):
    """The bytes are not a well-formed encoding (the parser then says so in its own words)."""


def _varint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def count_fields(data: bytes | memoryview, number: int, limit: int, start: int = 0, end: int | None = None,
                 inside: int | None = None) -> int:
    """How many fields numbered ``number`` the encoding ``data[start:end]`` holds — at its top level, or, with
    ``inside``, within each length-delimited field numbered ``inside`` (a nested message: protobuf merges
    repeats of it, so all of them count). Stops early once over ``limit``: the answer is then ``limit + 1``."""
    end = len(data) if end is None else end
    pos, count = start, 0
    while pos < end:
        key, pos = _varint(data, pos, end)
        wire_type, field = key & 7, key >> 3
        if wire_type == 0:
            _, pos = _varint(data, pos, end)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        elif wire_type == 2:
            length, pos = _varint(data, pos, end)
            if inside is not None and field == inside:
                count += count_fields(data, number, limit - count, pos, min(end, pos + length))
            elif inside is None and field == number:
                count += 1
            pos += length
        else:  # groups (3, 4) and reserved types: no request of ours has them
            raise WireError(f"wire type {wire_type}")
        if count > limit:
            return limit + 1
        if pos > end:
            raise WireError("a field runs past the end")
    return count


def events_in(data: bytes, message_name: str, limit: int) -> int:
    """The events a request message carries (at most ``limit + 1``: over the limit is all that matters), for the
    requests that carry events; 0 for any other."""
    if message_name == "VerifyLogRequest":
        return count_fields(data, GAME_LOG_EVENTS, limit, inside=VERIFY_LOG_LOG)
    if message_name in ("UploadLogRequest", "VerifyLiveRequest"):
        return count_fields(data, STREAM_EVENTS, limit)
    return 0


def could_exceed(size: int, limit: int) -> bool:
    """Whether a message of ``size`` bytes could hold more than ``limit`` events (each takes 2 bytes at least):
    a smaller one needs no count."""
    return size > 2 * limit
