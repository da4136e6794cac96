"""A small, strict CBOR (RFC 8949) encoder and decoder: the subset FreeKill writes.

FreeKill's replays (``.fk.rep``) and its network payloads are CBOR, written by Qt's
``QCborValue`` and by FreeKill's Lua encoder. This module reads and writes what those produce:
unsigned and negative integers of every width, byte and text strings, arrays and maps (definite
and indefinite length), false / true / null / undefined and the other simple values, half /
single / double floats, and tags (kept as :class:`Tag`, or skipped). It is our own code and
needs no dependency.

Strict: every malformed input — truncated, a reserved or misplaced code, bad UTF-8, trailing
bytes, a declared length beyond the bytes left, nesting deeper than ``max_depth``, more items
than ``max_items`` (a chunk of an indefinite-length string is an item), a duplicate or unhashable
map key — raises :class:`CborError` with the byte offset. A declared length is
checked against the bytes left before anything is allocated, so a hostile length costs nothing.
Non-minimal length encodings are well-formed CBOR and are accepted.

Encoding is deterministic: the shortest length encodings, maps in insertion order, every float
as a double (exact, so what is decoded is what was encoded).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_BIGNUM_BYTES",
    "UNDEFINED",
    "CborError",
    "Simple",
    "Tag",
    "Undefined",
    "decode",
    "decode_counted",
    "decode_prefix",
    "encode",
]

# Deep enough for any real payload (FreeKill's nest about 6 levels), shallow enough that the
# recursive decoder and encoder stay far below Python's recursion limit.
DEFAULT_MAX_DEPTH: Final = 128

# The longest bignum (tags 2 and 3) read: 2,467 decimal digits, so that every integer decoded can be written
# as text (Python refuses to for more than 4,300 digits: a ValueError wherever one was printed or used as a
# string key). Qt and Lua write none past 64 bits.
MAX_BIGNUM_BYTES: Final = 1024

_U64_MAX: Final = (1 << 64) - 1
_BREAK: Final = 0xFF


class CborError(ValueError):
    """Malformed CBOR (``offset``: where, in bytes from the start) or a value CBOR cannot hold
    (``offset`` None)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.reason = message
        self.offset = offset
        super().__init__(message if offset is None else f"{message} at byte {offset}")


class Undefined:
    """CBOR's ``undefined`` (simple value 23); :data:`UNDEFINED` is its one instance."""

    _instance: Undefined | None = None

    def __new__(cls) -> Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = Undefined()


@dataclass(frozen=True, slots=True)
class Simple:
    """A simple value other than false, true, null and undefined (0–19 or 32–255)."""

    value: int

    def __post_init__(self) -> None:
        if not (0 <= self.value <= 19 or 32 <= self.value <= 255):
            raise CborError(f"simple value {self.value} is not 0-19 or 32-255")


@dataclass(frozen=True, slots=True)
class Tag:
    """A tagged item: the tag number and the item it tags."""

    tag: int
    value: Any


# ---------------------------------------------------------------------------------------------
# decoding


def decode(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    str_keys: bool = False,
    skip_tags: bool = False,
    max_items: int | None = None,
) -> Any:
    """The one CBOR item that is all of ``data``; trailing bytes are an error.

    ``str_keys``: map keys come back as ``str`` — integer keys as their decimal strings (so a
    Lua table ``{[2] = "slash"}`` reads as ``{"2": "slash"}``, as JSON has it), byte-string keys
    as UTF-8 text; other key types are an error. Otherwise keys keep their CBOR type (and must be
    hashable: an array or map as key is an error). Keys that end up equal are an error.

    ``skip_tags``: a tagged item reads as the item itself. Otherwise as :class:`Tag`, except
    tags 2 and 3 (bignums), which read as ``int`` (one longer than :data:`MAX_BIGNUM_BYTES` is an
    error), and 55799 (self-described CBOR), always dropped.

    ``max_items``: the most items (every value, container or not, every map key, and every chunk of
    an indefinite-length string) the item may hold, itself included; each is counted before it is
    read. One byte can make an empty array that costs Python 64, so this, not the size, is what
    bounds the memory a decoded item takes.
    """
    return decode_counted(data, max_depth=max_depth, str_keys=str_keys, skip_tags=skip_tags,
                          max_items=max_items)[0]


def decode_counted(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    str_keys: bool = False,
    skip_tags: bool = False,
    max_items: int | None = None,
) -> tuple[Any, int]:
    """``decode``, and how many items the value holds (as ``max_items`` counts them)."""
    buf = bytes(data)
    decoder = _Decoder(buf, max_depth, str_keys, skip_tags, max_items)
    value, end = decoder.run(0)
    if end != len(buf):
        raise CborError(f"{len(buf) - end} trailing byte(s) after the CBOR item", end)
    return value, decoder.items


def decode_prefix(
    data: bytes | bytearray | memoryview,
    offset: int = 0,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    str_keys: bool = False,
    skip_tags: bool = False,
) -> tuple[Any, int]:
    """The CBOR item starting at ``offset`` and the offset just after it (for sequences)."""
    buf = bytes(data)
    if not 0 <= offset <= len(buf):
        raise CborError(f"offset {offset} is outside the {len(buf)} bytes", offset)
    return _Decoder(buf, max_depth, str_keys, skip_tags).run(offset)


class _Decoder:
    __slots__ = ("buf", "items", "max_depth", "max_items", "pos", "skip_tags", "str_keys")

    def __init__(self, buf: bytes, max_depth: int, str_keys: bool, skip_tags: bool,
                 max_items: int | None = None) -> None:
        self.buf = buf
        self.pos = 0
        self.items = 0
        self.max_items = len(buf) + 1 if max_items is None else max_items  # every item takes a byte at least
        self.max_depth = max_depth
        self.str_keys = str_keys
        self.skip_tags = skip_tags

    def run(self, offset: int) -> tuple[Any, int]:
        self.pos = offset
        try:
            value = self.item(0)
        except RecursionError:
            # Only if the caller chose a max_depth beyond what the Python stack holds.
            raise CborError("nesting too deep for the Python stack", self.pos) from None
        if value is _BREAK_MARK:
            raise CborError("'break' (0xff) outside an indefinite-length item", self.pos - 1)
        return value, self.pos

    # The head of an item: its major type, additional info and argument. A declared length is
    # an argument like any other; the callers check it against the bytes left.
    def head(self) -> tuple[int, int, int]:
        buf, pos = self.buf, self.pos
        if pos >= len(buf):
            raise CborError("truncated: an item expected", pos)
        ib = buf[pos]
        major, info = ib >> 5, ib & 0x1F
        if info < 24:
            self.pos = pos + 1
            return major, info, info
        if info <= 27:
            width = 1 << (info - 24)
            if pos + 1 + width > len(buf):
                raise CborError(f"truncated: a {width}-byte argument expected", pos)
            arg = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
            self.pos = pos + 1 + width
            return major, info, arg
        if info == 31:
            self.pos = pos + 1
            return major, info, -1
        raise CborError(f"reserved additional information {info} in initial byte 0x{ib:02x}", pos)

    def item(self, depth: int) -> Any:
        start = self.pos
        self.items += 1
        if self.items > self.max_items:
            raise CborError(f"more than {self.max_items} items", start)
        major, info, arg = self.head()
        if major == 0:
            if info == 31:
                raise CborError("indefinite length on an integer", start)
            return arg
        if major == 1:
            if info == 31:
                raise CborError("indefinite length on an integer", start)
            return -1 - arg
        if major == 2 or major == 3:
            raw = self.chunks(major, start) if info == 31 else self.take(arg, start)
            return raw if major == 2 else self.text(raw, start, info == 31)
        if major == 4 or major == 5 or major == 6:
            if depth >= self.max_depth:
                raise CborError(f"nesting deeper than {self.max_depth} levels", start)
            if major == 4:
                return self.array(info, arg, depth + 1, start)
            if major == 5:
                return self.map(info, arg, depth + 1, start)
            return self.tag(info, arg, depth + 1, start)
        return self.simple(info, arg, start)

    def take(self, n: int, start: int) -> bytes:
        left = len(self.buf) - self.pos
        if n > left:
            raise CborError(f"declared length {n} exceeds the {left} byte(s) left", start)
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        return raw

    def chunks(self, major: int, start: int) -> bytes:
        # RFC 8949 §3.2.3: definite-length chunks of the same major type, then 'break'. Each chunk counts as
        # an item, before it is read: a string of a million empty or one-byte chunks is a million items (one
        # byte each), as many as a million empty arrays, and refused as they are. The bytes go into one
        # buffer as they come, never a list of them (a Python object per chunk: 63 MiB of one-byte chunks
        # took 2.9 GiB that way).
        joined = bytearray()
        while True:
            if self.pos >= len(self.buf):
                raise CborError("truncated: indefinite-length string without 'break'", start)
            at = self.pos
            if self.buf[at] == _BREAK:
                self.pos += 1
                return bytes(joined)
            self.items += 1
            if self.items > self.max_items:
                raise CborError(f"more than {self.max_items} items", at)
            cmajor, cinfo, carg = self.head()
            if cmajor != major or cinfo == 31:
                raise CborError("a chunk of an indefinite-length string must be a definite string of its type", at)
            raw = self.take(carg, at)
            if major == 3:
                self.text(raw, at, False)  # each text chunk must be valid UTF-8 by itself
            joined += raw

    def text(self, raw: bytes, start: int, chunked: bool) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            # For a definite string the offset is that of the bad byte; chunks were each
            # checked where they stand, so a joined string cannot fail here.
            where = start if chunked else self.pos - len(raw) + e.start
            raise CborError(f"invalid UTF-8 in a text string ({e.reason})", where) from None

    def array(self, info: int, n: int, depth: int, start: int) -> list[Any]:
        out: list[Any] = []
        if info == 31:
            while True:
                value = self.item(depth)
                if value is _BREAK_MARK:
                    return out
                out.append(value)
        left = len(self.buf) - self.pos
        if n > left:  # every item takes at least one byte
            raise CborError(f"array of {n} items cannot fit in the {left} byte(s) left", start)
        for _ in range(n):
            value = self.item(depth)
            if value is _BREAK_MARK:
                raise CborError("'break' inside a definite-length array", self.pos - 1)
            out.append(value)
        return out

    def map(self, info: int, n: int, depth: int, start: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        if info != 31:
            left = len(self.buf) - self.pos
            if 2 * n > left:
                raise CborError(f"map of {n} pairs cannot fit in the {left} byte(s) left", start)
        count = 0
        while info == 31 or count < n:
            at = self.pos
            key = self.item(depth)
            if key is _BREAK_MARK:
                if info == 31:
                    return out
                raise CborError("'break' inside a definite-length map", at)
            key = self.key(key, at)
            vat = self.pos
            value = self.item(depth)
            if value is _BREAK_MARK:
                raise CborError("'break' where a map value was expected", vat)
            if key in out:
                raise CborError(f"duplicate map key {key!r}", at)
            out[key] = value
            count += 1
        return out

    def key(self, key: Any, at: int) -> Any:
        if self.str_keys:
            if isinstance(key, str):
                return key
            if isinstance(key, int) and not isinstance(key, bool):
                return str(key)  # a Lua table's integer key, as JSON writes it
            if isinstance(key, bytes):
                return self.text(key, at, True)
            raise CborError(f"map key of type {type(key).__name__} where string keys are needed", at)
        try:
            hash(key)
        except TypeError:  # an array or map (perhaps inside a tag) as key: Python cannot hold it
            raise CborError(f"map key of type {type(key).__name__} is not hashable", at) from None
        return key

    def tag(self, info: int, tag: int, depth: int, start: int) -> Any:
        if info == 31:
            raise CborError("indefinite length on a tag", start)
        at = self.pos
        value = self.item(depth)
        if value is _BREAK_MARK:
            raise CborError("'break' where a tagged item was expected", at)
        if tag in (2, 3) and isinstance(value, bytes):
            if len(value) > MAX_BIGNUM_BYTES:
                raise CborError(f"a bignum of {len(value)} bytes, more than the {MAX_BIGNUM_BYTES} read", start)
            n = int.from_bytes(value, "big")
            return n if tag == 2 else -1 - n
        if self.skip_tags or tag == 55799:
            return value
        return Tag(tag, value)

    def simple(self, info: int, arg: int, start: int) -> Any:
        if info < 20:
            return Simple(info)
        if info == 20:
            return False
        if info == 21:
            return True
        if info == 22:
            return None
        if info == 23:
            return UNDEFINED
        if info == 24:
            if arg < 32:  # RFC 8949 §3.3: such a value must use the one-byte form
                raise CborError(f"simple value {arg} in the two-byte form", start)
            return Simple(arg)
        raw = self.buf[start + 1 : self.pos]
        if info == 25:
            return float(struct.unpack(">e", raw)[0])
        if info == 26:
            return float(struct.unpack(">f", raw)[0])
        if info == 27:
            return float(struct.unpack(">d", raw)[0])
        return _BREAK_MARK  # info 31: the callers that allow it check for it


class _BreakMark:
    __slots__ = ()


_BREAK_MARK: Final = _BreakMark()


# ---------------------------------------------------------------------------------------------
# encoding


def encode(value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """``value`` as CBOR: None, bool, int (64-bit range), float (as a double), str, bytes /
    bytearray / memoryview, list / tuple, dict (or any Mapping; keys of these types too),
    :data:`UNDEFINED`, :class:`Simple`, :class:`Tag`. Anything else, an integer outside the
    64-bit range (which Qt and Lua cannot hold), or nesting deeper than ``max_depth`` (a cycle,
    say) raises :class:`CborError`."""
    out = bytearray()
    try:
        _encode(value, out, 0, max_depth)
    except RecursionError:
        raise CborError("nesting too deep for the Python stack") from None
    return bytes(out)


def _head(major: int, arg: int, out: bytearray) -> None:
    mt = major << 5
    if arg < 24:
        out.append(mt | arg)
    elif arg < 0x100:
        out += bytes((mt | 24, arg))
    elif arg < 0x10000:
        out.append(mt | 25)
        out += arg.to_bytes(2, "big")
    elif arg < 0x1_0000_0000:
        out.append(mt | 26)
        out += arg.to_bytes(4, "big")
    else:
        out.append(mt | 27)
        out += arg.to_bytes(8, "big")


def _encode(value: Any, out: bytearray, depth: int, max_depth: int) -> None:
    if value is None:
        out.append(0xF6)
    elif value is True:
        out.append(0xF5)
    elif value is False:
        out.append(0xF4)
    elif isinstance(value, int):
        if 0 <= value <= _U64_MAX:
            _head(0, value, out)
        elif -1 - _U64_MAX <= value < 0:
            _head(1, -1 - value, out)
        else:
            raise CborError(f"integer {value} is outside CBOR's 64-bit range")
    elif isinstance(value, float):
        out.append(0xFB)
        out += struct.pack(">d", value)
    elif isinstance(value, str):
        raw = _utf8(value)
        _head(3, len(raw), out)
        out += raw
    elif isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        _head(2, len(raw), out)
        out += raw
    elif value is UNDEFINED:
        out.append(0xF7)
    elif isinstance(value, Simple):
        if value.value < 24:
            out.append(0xE0 | value.value)
        else:
            out += bytes((0xF8, value.value))
    else:
        if depth >= max_depth:
            raise CborError(f"nesting deeper than {max_depth} levels (a cycle?)")
        if isinstance(value, list | tuple):
            _head(4, len(value), out)
            for v in value:
                _encode(v, out, depth + 1, max_depth)
        elif isinstance(value, Mapping):
            _head(5, len(value), out)
            for k, v in value.items():
                _encode(k, out, depth + 1, max_depth)
                _encode(v, out, depth + 1, max_depth)
        elif isinstance(value, Tag):
            if not 0 <= value.tag <= _U64_MAX:
                raise CborError(f"tag {value.tag} is outside 0..2**64-1")
            _head(6, value.tag, out)
            _encode(value.value, out, depth + 1, max_depth)
        else:
            raise CborError(f"cannot encode a {type(value).__name__} as CBOR")


def _utf8(value: str) -> bytes:
    try:
        return value.encode("utf-8", "strict")
    except UnicodeEncodeError as e:  # a lone surrogate: no UTF-8 exists for it
        raise CborError(f"string is not encodable as UTF-8 ({e.reason})") from None



def json_shaped(value: Any) -> Any:
    """A decoded FreeKill payload as JSON would say it (the shape the transcripts have): byte strings as text
    (Lua's strings are bytes), undefined as null. CborError (offset None) for a string that is not UTF-8, or
    a simple value, which no FreeKill message holds; its message reads on after the name of what held it."""
    if isinstance(value, list):
        return [json_shaped(v) for v in value]
    if isinstance(value, dict):
        return {k: json_shaped(v) for k, v in value.items()}
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CborError(f"(a string in it) is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if value is UNDEFINED:
        return None
    if isinstance(value, Simple):
        raise CborError(f"holds CBOR simple value {value.value}, which no FreeKill message has")
    return value
