"""importers/freekill/cbor.py: RFC 8949's examples, the strictness promised, and (Hypothesis)
round trips and garbage that never raises anything but CborError."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from importers.freekill.cbor import (
    MAX_BIGNUM_BYTES,
    UNDEFINED,
    CborError,
    Simple,
    Tag,
    decode,
    decode_counted,
    decode_prefix,
    encode,
)

# RFC 8949 Appendix A: (hex, value); both directions hold for these (shortest forms).
BOTH_WAYS: list[tuple[str, Any]] = [
    ("00", 0), ("01", 1), ("0a", 10), ("17", 23), ("1818", 24), ("1819", 25), ("1864", 100),
    ("1903e8", 1000), ("1a000f4240", 1000000), ("1b000000e8d4a51000", 1000000000000),
    ("1bffffffffffffffff", 18446744073709551615), ("3bffffffffffffffff", -18446744073709551616),
    ("20", -1), ("29", -10), ("3863", -100), ("3903e7", -1000),
    ("fb3ff199999999999a", 1.1), ("fb7e37e43c8800759c", 1.0e300), ("fbc010666666666666", -4.1),
    ("f4", False), ("f5", True), ("f6", None), ("f7", UNDEFINED), ("f0", Simple(16)), ("f8ff", Simple(255)),
    ("c074323031332d30332d32315432303a30343a30305a", Tag(0, "2013-03-21T20:04:00Z")),
    ("d74401020304", Tag(23, b"\x01\x02\x03\x04")),
    ("40", b""), ("4401020304", b"\x01\x02\x03\x04"),
    ("60", ""), ("6161", "a"), ("6449455446", "IETF"), ("62225c", '"\\'), ("62c3bc", "ü"), ("63e6b0b4", "水"),
    ("64f0908591", "\U00010151"),
    ("80", []), ("83010203", [1, 2, 3]), ("8301820203820405", [1, [2, 3], [4, 5]]),
    ("98190102030405060708090a0b0c0d0e0f101112131415161718181819", list(range(1, 26))),
    ("a0", {}), ("a201020304", {1: 2, 3: 4}), ("a26161016162820203", {"a": 1, "b": [2, 3]}),
    ("826161a161626163", ["a", {"b": "c"}]),
]

# Decoded only: other float widths, bignums, indefinite lengths, non-minimal heads.
DECODE_ONLY: list[tuple[str, Any]] = [
    ("f90000", 0.0), ("f98000", -0.0), ("f93c00", 1.0), ("f93e00", 1.5), ("f97bff", 65504.0),
    ("fa47c35000", 100000.0), ("fa7f7fffff", 3.4028234663852886e38), ("f90001", 5.960464477539063e-8),
    ("f90400", 0.00006103515625), ("f9c400", -4.0), ("f97c00", math.inf), ("f9fc00", -math.inf),
    ("fa7f800000", math.inf), ("fb7ff0000000000000", math.inf),
    ("c249010000000000000000", 18446744073709551616), ("c349010000000000000000", -18446744073709551617),
    ("5f42010243030405ff", b"\x01\x02\x03\x04\x05"), ("7f657374726561646d696e67ff", "streaming"),
    ("9fff", []), ("9f018202039f0405ffff", [1, [2, 3], [4, 5]]), ("83018202039f0405ff", [1, [2, 3], [4, 5]]),
    ("bf61610161629f0203ffff", {"a": 1, "b": [2, 3]}), ("bf6346756ef563416d7421ff", {"Fun": True, "Amt": -2}),
    ("1800", 0), ("190001", 1), ("1b0000000000000001", 1), ("d9d9f701", 1),  # 55799: self-described CBOR
]


@pytest.mark.parametrize(("hexed", "value"), BOTH_WAYS)
def test_rfc_examples_both_ways(hexed: str, value: Any) -> None:
    assert decode(bytes.fromhex(hexed)) == value
    assert encode(value).hex() == hexed


@pytest.mark.parametrize(("hexed", "value"), DECODE_ONLY)
def test_rfc_examples_decoded(hexed: str, value: Any) -> None:
    got = decode(bytes.fromhex(hexed))
    assert got == value and type(got) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, got) == math.copysign(1, value)


def test_nan_of_every_width() -> None:
    for hexed in ("f97e00", "fa7fc00000", "fb7ff8000000000000"):
        assert math.isnan(decode(bytes.fromhex(hexed)))


def test_integer_heads_are_the_shortest() -> None:
    for value, size in [(23, 1), (24, 2), (255, 2), (256, 3), (65535, 3), (65536, 5), (2**32 - 1, 5), (2**32, 9)]:
        assert len(encode(value)) == size and len(encode(-1 - value)) == size
        assert decode(encode(value)) == value and decode(encode(-1 - value)) == -1 - value


def test_tags_kept_skipped_or_bignum() -> None:
    assert decode(bytes.fromhex("c11a514b67b0")) == Tag(1, 1363896240)
    assert decode(bytes.fromhex("c11a514b67b0"), skip_tags=True) == 1363896240
    assert decode(bytes.fromhex("d8208101"), skip_tags=True) == [1]
    assert decode(bytes.fromhex("c24101"), skip_tags=True) == 1  # a bignum is an int either way


def test_str_keys() -> None:
    # A Lua table's integer keys read as JSON's decimal strings; byte-string keys as text.
    assert decode(encode({2: "slash", 3: 1, -1: 0, b"x": 1, "y": 2}), str_keys=True) == {
        "2": "slash", "3": 1, "-1": 0, "x": 1, "y": 2,
    }
    assert decode(encode({2: "slash"})) == {2: "slash"}  # without str_keys keys keep their type


MALFORMED: list[tuple[str, str, int]] = [
    ("", "truncated", 0),
    ("18", "truncated", 0),
    ("1b000000", "truncated", 0),
    ("1c", "reserved additional information 28", 0),
    ("5e", "reserved additional information 30", 0),
    ("1f", "indefinite length on an integer", 0),
    ("3f", "indefinite length on an integer", 0),
    ("df00", "indefinite length on a tag", 0),
    ("ff", "'break'", 0),
    ("8101ff", "trailing byte", 2),
    ("0101", "trailing byte", 1),
    ("6161ff", "trailing byte", 2),
    ("62c3", "exceeds", 0),
    ("5b7fffffffffffffff00", "exceeds", 0),
    ("9b7fffffffffffffff", "cannot fit", 0),
    ("bb7fffffffffffffff", "cannot fit", 0),
    ("a20102", "cannot fit", 0),
    ("8201", "cannot fit", 0),
    ("8118", "truncated", 1),
    ("9f01", "truncated", 2),
    ("5f41", "exceeds", 1),
    ("5f4100", "truncated: indefinite-length string without", 0),
    ("5f", "truncated", 0),
    ("5f01ff", "chunk", 1),
    ("5f6161ff", "chunk", 1),
    ("7f4161ff", "chunk", 1),
    ("5f5f4101ffff", "chunk", 1),
    ("62c328", "invalid UTF-8", 1),
    ("63616263ff", "trailing", 4),
    ("64eda080e0", "invalid UTF-8", 1),  # a UTF-16 surrogate written as UTF-8
    ("62c0af", "invalid UTF-8", 1),  # an overlong form
    ("7f61e16180ff", "invalid UTF-8", 2),  # each chunk must be UTF-8 by itself
    ("f800", "two-byte form", 0),
    ("f818", "two-byte form", 0),
    ("a2010101", "cannot fit", 0),
    ("a201010102", "duplicate map key", 3),
    ("a1810100", "not hashable", 1),
    ("a1a00000", "not hashable", 1),
    ("bf01ff", "'break' where a map value", 2),
    ("8201ff", "'break' inside a definite-length array", 2),
    ("a1ff00", "'break' inside a definite-length map", 1),
    ("c1ff", "'break' where a tagged item", 1),
    ("f9", "truncated", 0),
    ("fb000000", "truncated", 0),
]


@pytest.mark.parametrize(("hexed", "words", "offset"), MALFORMED)
def test_malformed_raises_with_offset(hexed: str, words: str, offset: int) -> None:
    with pytest.raises(CborError) as e:
        decode(bytes.fromhex(hexed))
    assert words in str(e.value) and e.value.offset == offset, str(e.value)
    assert f"at byte {offset}" in str(e.value)


def test_str_keys_refuses_other_key_types_and_collisions() -> None:
    for value in ({1.5: 0}, {True: 0}, {None: 0}):
        with pytest.raises(CborError, match="string keys are needed"):
            decode(encode(value), str_keys=True)
    with pytest.raises(CborError, match="duplicate map key '2'"):
        decode(encode({2: "a", "2": "b"}), str_keys=True)


def test_nesting_is_limited() -> None:
    deep = bytes.fromhex("81") * 100_000 + b"\x00"
    with pytest.raises(CborError, match="nesting deeper than 128 levels") as e:
        decode(deep)
    assert e.value.offset == 128
    assert decode(bytes.fromhex("81") * 10 + b"\x00", max_depth=10) == [[[[[[[[[[0]]]]]]]]]]
    with pytest.raises(CborError, match="nesting deeper than 9"):
        decode(bytes.fromhex("81") * 10 + b"\x00", max_depth=9)
    with pytest.raises(CborError, match="nesting"):
        decode(bytes.fromhex("c1") * 1000 + b"\x00")  # tags nest too
    with pytest.raises(CborError, match="nesting"):
        decode(bytes.fromhex("81") * 100_000 + b"\x00", max_depth=1_000_000)  # beyond the Python stack


def test_absurd_lengths_allocate_nothing() -> None:
    # 2**64-1 items or bytes declared with a handful of bytes behind: refused at once.
    for head in ("5bffffffffffffffff", "7bffffffffffffffff", "9bffffffffffffffff", "bbffffffffffffffff"):
        with pytest.raises(CborError, match="byte"):
            decode(bytes.fromhex(head) + b"\x00" * 8)


def test_every_chunk_of_an_indefinite_string_is_an_item() -> None:
    """Issue 43, N2: a chunk is counted before it is read, against max_items as an item is (a 64 KB replay of
    one-byte chunks, 63 MiB unpacked, took a worker to 2.9 GiB as a list of them)."""
    for head, chunk, value in ((b"\x5f", b"\x41a", b"a" * 5), (b"\x7f", b"\x61a", "a" * 5), (b"\x5f", b"\x40", b"")):
        data = head + chunk * 5 + b"\xff"
        assert decode_counted(data) == (value, 6)  # the string and its 5 chunks
        assert decode(data, max_items=6) == value
        with pytest.raises(CborError, match="more than 5 items") as e:
            decode(data, max_items=5)
        assert e.value.offset == 1 + 4 * len(chunk)  # the fifth chunk's head: refused before it is read
    assert decode_counted(b"\x5f\xff") == (b"", 1)


def test_a_bignum_is_at_most_max_bignum_bytes() -> None:
    """Issue 43: a longer one is an int Python cannot write as decimal (a ValueError wherever it was printed,
    or used as a string key: a FreeKill payload {bignum: 0} crashed the importer)."""
    longest = b"\xc2\x59" + MAX_BIGNUM_BYTES.to_bytes(2, "big") + b"\x01" * MAX_BIGNUM_BYTES
    assert str(decode(longest)).isdigit()
    assert decode(b"\xa1" + longest + b"\x00", str_keys=True) == {str(decode(longest)): 0}
    for tag in (b"\xc2", b"\xc3"):
        longer = tag + b"\x59" + (MAX_BIGNUM_BYTES + 1).to_bytes(2, "big") + b"\x01" * (MAX_BIGNUM_BYTES + 1)
        with pytest.raises(CborError, match=f"a bignum of {MAX_BIGNUM_BYTES + 1} bytes, more than the 1024 read"):
            decode(b"\xa1" + longer + b"\x00", str_keys=True)


def test_encoder_refuses_what_cbor_cannot_hold() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for value, words in [
        (2**64, "64-bit"), (-(2**64) - 1, "64-bit"), (object(), "cannot encode"), ({1, 2}, "cannot encode"),
        (cyclic, "nesting"), ("\ud800", "UTF-8"), (Tag(-1, 0), "tag"),
    ]:
        with pytest.raises(CborError, match=words):
            encode(value)
    with pytest.raises(CborError, match="simple value 22"):
        Simple(22)


def test_decode_prefix_reads_a_sequence() -> None:
    data = encode(1) + encode("two") + encode([3])
    values, pos = [], 0
    while pos < len(data):
        value, pos = decode_prefix(data, pos)
        values.append(value)
    assert values == [1, "two", [3]]


# --- properties ---------------------------------------------------------------------------------

scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64 - 1)
    | st.floats(allow_nan=False) | st.text() | st.binary() | st.just(UNDEFINED)
    | st.builds(Simple, st.integers(0, 19) | st.integers(32, 255))
)
keys = st.text() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6)
    | st.dictionaries(keys, inner, max_size=6)
    | st.builds(Tag, st.integers(0, 2**64 - 1).filter(lambda t: t not in (2, 3, 55799)), inner),
    max_leaves=40,
)


@given(values)
@settings(max_examples=400, deadline=None)
def test_round_trip(value: Any) -> None:
    data = encode(value)
    assert decode(data) == value
    assert encode(decode(data)) == data  # one encoding per value


@given(st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.integers(0, 1000), inner, max_size=5),
    max_leaves=30,
))
@settings(max_examples=200, deadline=None)
def test_int_keys_read_as_their_decimal_strings(value: Any) -> None:
    def stringified(v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k): stringified(x) for k, x in v.items()}
        if isinstance(v, list):
            return [stringified(x) for x in v]
        return v

    assert decode(encode(value), str_keys=True) == stringified(value)


def _decodes_or_cbor_error(data: bytes) -> None:
    for options in ({}, {"str_keys": True, "skip_tags": True}):
        try:
            decode(data, **options)
        except CborError as e:
            assert e.offset is not None and 0 <= e.offset <= len(data)


@given(st.binary(max_size=200))
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_garbage_raises_only_cbor_error(data: bytes) -> None:
    _decodes_or_cbor_error(data)


@given(values, st.data())
@settings(max_examples=400, deadline=None)
def test_damaged_encodings_raise_only_cbor_error(value: Any, data: st.DataObject) -> None:
    raw = bytearray(encode(value))
    cut = data.draw(st.integers(0, len(raw)))
    _decodes_or_cbor_error(bytes(raw[:cut]))  # truncated
    if raw:
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))  # one byte changed
        _decodes_or_cbor_error(bytes(raw))
