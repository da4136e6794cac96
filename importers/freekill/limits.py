"""What reading one FreeKill record may cost, as a function of the caller's size limit.

A record is small on the wire and may be large unpacked: a 130 KB gzip of transcript lines whose
``data`` is two million empty lists is 126 MiB of text and, parsed, three GiB of Python objects.
So every input is bounded twice (docs/freekill.md, "Limits"):

- its **size unpacked**, by the caller's limit (the service's ``--max-record-bytes``, the command
  line's ``MAX_RECORD_BYTES``): xz, gzip and qCompress are inflated as streams and stop one
  byte past it;
- its **items** (every array, object, key and value), counted from the text before it is parsed
  (:func:`json_items`) or while it is decoded (CBOR): at most ``max_bytes // BYTES_PER_ITEM`` in
  a record, :data:`MAX_LINE_ITEMS` in one transcript line, whose length is at most
  :data:`MAX_LINE_BYTES`.

A parsed item costs Python at most about 72 bytes (an empty object; a list slot and a small
integer cost 8), so the parsed record stays under ``72 / BYTES_PER_ITEM`` = 4.5 times the limit.
Real records are inside these bounds: over the 139 FreeKill games we have, a transcript holds one
counted item per 8 bytes or more (the items of what the converter reads, plus one per message), so
any real transcript up to half the limit is read; its longest line is 4.9 KB and holds 848 items.
A CBOR replay is denser (one item per 3.8 bytes: the longest game's, 5 MB unpacked, holds 1.35 M).
See docs/freekill.md#limits and tests/test_fkrep_limits.py.
"""

from __future__ import annotations

import io
import lzma
from typing import Any, Final

from verifier.logio import MAX_RECORD_BYTES

# The command line's limit on a record's size, packed or not (the service's --max-record-bytes default).
DEFAULT_MAX_BYTES: Final = MAX_RECORD_BYTES
# A record may hold one item per this many bytes of its limit.
BYTES_PER_ITEM: Final = 16
# One transcript line (one server message): the longest real one is 4.9 KB with 848 items.
MAX_LINE_BYTES: Final = 1 << 20
MAX_LINE_ITEMS: Final = 1 << 16


def max_items(max_bytes: int) -> int:
    """The most items a record read under the size limit ``max_bytes`` may hold."""
    return max(max_bytes // BYTES_PER_ITEM, MAX_LINE_ITEMS)


def json_items(text: bytes | str) -> int:
    """At least as many as the items (arrays, objects, keys and values) JSON ``text`` holds:
    every value but a container's first follows a ``,``, every value of an object a ``:``, every
    container opens with ``[`` or ``{``. Counted by C loops over the text before it is parsed, so
    an absurd text is refused before it costs anything (``[[],[],…]``: 3 bytes of text, 64 of
    Python per item). Brackets and commas inside strings count too: an overestimate only."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") + text.count(",") + text.count(":") + 1
    return text.count(b"[") + text.count(b"{") + text.count(b",") + text.count(b":") + 1


# JSON's escapes of the characters json_items counts ([ { , :), as a string holding JSON text may write them:
# "\u005b" is a '[' once the string is parsed, and another once its text is.
_ESCAPED: Final = tuple(f"\\u00{code}".encode() for code in ("5b", "5B", "7b", "7B", "2c", "2C", "3a", "3A"))


def json_nested_items(text: bytes) -> int:
    """At least as many as the items JSON ``text`` holds together with the JSON texts its strings hold (an
    old replay's payloads, parsed again): :func:`json_items` of the text, and every ``[ { , :`` written as an
    escape (``\\u005b``), which the strings' texts hold where the text does not. Each such character is
    counted once, in the text or for the string's text, so that a payload's items cannot hide from the
    record's count behind escapes (a payload's own count, :func:`json_items` of its text, sees them)."""
    return json_items(text) + sum(text.count(escape) for escape in _ESCAPED)


class TooLarge(ValueError):
    """An input past one of the bounds above; the message says which and how to go past it."""


def xz_memory(max_bytes: int) -> int:
    """The most memory the xz decoder may take to unpack a record read under ``max_bytes``: xz's own
    dictionary, the size its file declares, which the decoder allocates at once (a 10 KB file may declare
    1.5 GiB). That of ``xz -9`` (64 MiB), or the record's limit when larger (a dictionary larger than the data
    serves nothing), and the decoder's few MiB of its own."""
    return max(max_bytes, 64 << 20) + (8 << 20)


class XzReader(io.RawIOBase):
    """xz ``data`` inflated as it is read, as ``lzma.LZMAFile`` reads it (concatenated streams, and bytes after
    the last one that are not another ignored), with the decoder's memory at most ``memory``: a file declaring
    a larger dictionary is :class:`TooLarge` before anything is allocated for it."""

    _STEP = 1 << 16  # packed bytes fed at a time

    def __init__(self, data: bytes, memory: int) -> None:
        super().__init__()
        self.data = memoryview(data)
        self.pos = 0
        self.memory = memory
        self.decoder = lzma.LZMADecompressor(lzma.FORMAT_AUTO, memlimit=memory)
        self.ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        want = len(buffer)
        while want and not self.ended:
            fresh = False
            if self.decoder.eof:
                self.pos -= len(self.decoder.unused_data)  # what it was fed past its end: the next stream's
                if self.pos >= len(self.data):
                    self.ended = True
                    break
                self.decoder = lzma.LZMADecompressor(lzma.FORMAT_AUTO, memlimit=self.memory)
                fresh = True
            if self.decoder.needs_input:
                chunk = self.data[self.pos : self.pos + self._STEP]
                if not chunk:
                    raise EOFError("the xz input ends before its stream does")
                self.pos += len(chunk)
            else:
                chunk = self.data[:0]
            try:
                out = self.decoder.decompress(chunk, max_length=want)
            except lzma.LZMAError as err:
                if "Memory usage limit" in str(err):
                    raise TooLarge(f"the xz input needs more than {self.memory >> 20} MiB to unpack (the dictionary "
                                   "it declares), more than a record under this limit may: pack it with xz -9 or "
                                   "less") from None
                if fresh:  # bytes after the last stream that are not another: ignored, as LZMAFile does
                    self.ended = True
                    break
                raise
            if out:
                buffer[: len(out)] = out
                return len(out)
        return 0


class BoundedReader:
    """A binary stream (an inflating one) read at most ``max_bytes`` bytes far: one byte more is
    :class:`TooLarge`, so a bomb costs the limit and no more."""

    def __init__(self, stream: io.BufferedIOBase, max_bytes: int, what: str) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        self.what = what
        self.read_bytes = 0

    def _count(self, chunk: bytes) -> bytes:
        self.read_bytes += len(chunk)
        if self.read_bytes > self.max_bytes:
            raise TooLarge(f"{self.what} is over {self.max_bytes} bytes unpacked, the limit for a record")
        return chunk

    def read(self) -> bytes:
        """All of it (at most the limit)."""
        return self._count(self.stream.read(self.max_bytes - self.read_bytes + 1))

    def head(self, n: int) -> bytes:
        return self._count(self.stream.read(n))

    def lines(self, first: bytes = b"") -> LineReader:
        return LineReader(self, first)


class LineReader:
    """The lines of a :class:`BoundedReader` (``first``: bytes already read from it), each at
    most :data:`MAX_LINE_BYTES` long, without the whole text ever in memory."""

    def __init__(self, reader: BoundedReader, first: bytes) -> None:
        self.reader = reader
        self.pending = first
        self.number = 0

    def __iter__(self) -> LineReader:
        return self

    def __next__(self) -> bytes:
        newline = self.pending.find(b"\n")
        if newline >= 0:
            line, self.pending = self.pending[: newline + 1], self.pending[newline + 1 :]
        else:
            rest = self.reader._count(self.reader.stream.readline(MAX_LINE_BYTES + 1 - len(self.pending)))
            line, self.pending = self.pending + rest, b""
            if not line:
                raise StopIteration
        self.number += 1
        if len(line) > MAX_LINE_BYTES:
            raise TooLarge(f"line {self.number} is over {MAX_LINE_BYTES} bytes: no FreeKill message is that long")
        return line
