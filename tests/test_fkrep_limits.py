"""What reading a FreeKill record may cost (importers/freekill/limits.py; issue 27.3): a small
compressed record that unpacks to a huge one, or to a modest text that parses into a huge number
of Python objects, is refused quickly with an ImportFailure, with the memory it took bounded
(measured with tracemalloc); the caller's limit (the service's --max-record-bytes) is what bounds
it; and real records are far inside every bound.

The first bomb is the audit's: a 130 KB gzip of transcript lines whose ``data`` is two million
empty lists (126 MiB unpacked), which took a worker to 3,263 MiB."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from importers.freekill import ImportFailure, cbor, import_freekill
from importers.freekill.api import needed
from importers.freekill.convert import convert
from importers.freekill.fkrep import FIRST_ENTRY, FreeKillFormatError, qcompress, read_fkrep
from importers.freekill.limits import (
    BYTES_PER_ITEM,
    DEFAULT_MAX_BYTES,
    MAX_LINE_BYTES,
    MAX_LINE_ITEMS,
    json_items,
    json_nested_items,
    max_items,
    xz_memory,
)
from importers.freekill.transcript import read_transcript
from tools.hostile.record_attacks import xz_declaring

MIB = 1 << 20
DATA = Path(__file__).parent / "data" / "freekill" / "transcripts"
GAMES = sorted(p.name.removesuffix(".xz") for p in DATA.glob("*.jsonl.xz"))
META = b'{"seq": 1, "kind": "meta", "players": 4, "settings": {"gameMode": "aaa_role_mode"}}\n'


def line(seq: int, cmd: str, data: bytes) -> bytes:
    return b'{"seq": %d, "kind": "notify", "to": [1], "cmd": "%s", "data": ' % (seq, cmd.encode()) + data + b"}\n"


def gzip_of(parts: Iterator[bytes]) -> bytes:
    """gzip of the parts, streamed (the bomb is never whole in memory here either)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as gz:
        for part in parts:
            gz.write(part)
    return out.getvalue()


def lists(n: int) -> bytes:
    return b"[" + b"[]," * (n - 1) + b"[]]"


def zeros(n: int) -> bytes:
    return b"[" + b"0," * (n - 1) + b"0]"


def transcript_bomb(cmd: str, data: bytes, copies: int) -> bytes:
    def parts() -> Iterator[bytes]:
        yield META
        for i in range(copies):
            yield line(i + 2, cmd, data)
    return gzip_of(parts())


def refused(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, float]:
    """The refusal's message and the peak memory (MiB) the import took."""
    tracemalloc.start()
    try:
        with pytest.raises(ImportFailure) as info:
            import_freekill(data, "bomb", max_bytes=max_bytes)
        peak = tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()
    return str(info.value), peak


@pytest.fixture(scope="module")
def audit_bomb() -> bytes:
    bomb = transcript_bomb("MoveCards", lists(2_000_000), 21)
    assert 100_000 < len(bomb) < 200_000  # the audit's was 129,825 bytes
    return bomb


def test_the_audits_bomb_is_refused_at_its_first_line(audit_bomb: bytes) -> None:
    why, peak = refused(audit_bomb)
    assert why == f"line 2 is over {MAX_LINE_BYTES} bytes: no FreeKill message is that long"
    assert peak < 100  # it took a worker to 3,263 MiB; here only the one line's first MiB is read


def test_a_line_of_too_many_items_is_refused_unparsed() -> None:
    why, peak = refused(transcript_bomb("MoveCards", lists(200_000), 1))  # 600 KB: under the line's bytes
    assert why.startswith("not a FreeKill transcript: line 2: up to 400012 items, more than any FreeKill message "
                          f"holds ({MAX_LINE_ITEMS}): refused unread")
    assert peak < 10


@pytest.mark.parametrize("data", [lists(30_000), zeros(60_000)], ids=["empty lists", "zeros"])
def test_lines_under_the_line_bounds_are_bounded_together(data: bytes) -> None:
    """Each line is fine; kept together they are past the record's item budget (max_bytes / 16)."""
    limit = 8 * MIB
    why, peak = refused(transcript_bomb("MoveCards", data, 200), max_bytes=limit)
    assert f"the transcript holds more than {max_items(limit)} items, the most a record of this size limit may" in why
    assert peak < 72 * max_items(limit) / MIB + 10  # the bound docs/freekill.md states, and far less than that
    assert peak < 40


def test_lines_the_converter_does_not_read_are_dropped_as_they_are_read() -> None:
    """An Animate line's data is never kept: a stream of them costs one line at a time, until the
    record is past its size unpacked."""
    limit = 8 * MIB
    # 9 MB unpacked, and 6 M items: over ten times the record's item budget, were they kept
    why, peak = refused(transcript_bomb("Animate", lists(30_000), 100), max_bytes=limit)
    assert why == f"the input is over {limit} bytes unpacked, the limit for a record"
    assert peak < 20


@pytest.mark.parametrize("pack", [gzip.compress, lzma.compress], ids=["gzip", "xz"])
def test_the_unpacked_size_is_bounded_by_the_callers_limit(pack: Callable[[bytes], bytes]) -> None:
    text = META + line(2, "Animate", b"[1]") * 20_000  # 1.3 MB
    why, peak = refused(pack(text), max_bytes=MIB // 4)
    assert why == f"the input is over {MIB // 4} bytes unpacked, the limit for a record"
    assert peak < 16  # xz's decoder has an 8 MiB dictionary of its own
    assert "no seating" in refused(pack(text), max_bytes=2 * MIB)[0]  # under it, it is read (and refused later)
    assert "the input is 2000 bytes; the limit is 1000" in refused(b"{" * 2000, max_bytes=1000)[0]


def fkrep_items(entries: list[list[object]]) -> list[object]:
    return ["0.5.22", "20250101000000", cbor.encode([4, 15, {}]), cbor.encode([1, "p1", "liubei"]), "", "normal",
            "", "", "", "", *entries]


def test_a_replay_payload_of_too_many_items_is_refused() -> None:
    payload = b"\x9a" + (2_000_000).to_bytes(4, "big") + b"\x80" * 2_000_000  # 2 M empty arrays
    bomb = qcompress(cbor.encode(fkrep_items([[0, False, "MoveCards", payload]])), 9)
    assert len(bomb) < 10_000
    why, peak = refused(bomb)
    assert why == (f"not a FreeKill client replay: entry [{FIRST_ENTRY}] (MoveCards) payload holds more than "
                   f"{MAX_LINE_ITEMS} items, more than any FreeKill message holds: refused before it is read whole")
    assert peak < 20  # the inflated 2 MB, not 2 M Python lists


def test_a_replay_of_too_many_items_is_refused() -> None:
    limit = 8 * MIB
    entries: list[list[object]] = [[0, False, "MoveCards", b"\x80"] for _ in range(200_000)]  # 1 M items
    bomb = qcompress(cbor.encode(fkrep_items(entries)), 9)
    why, peak = refused(bomb, max_bytes=limit)
    assert why == (f"not a FreeKill client replay: the recording holds more items than the whole recording may "
                   f"({max_items(limit)}): refused before it is read whole")
    assert peak < 72 * max_items(limit) / MIB + 10


def test_an_old_json_replay_is_counted_before_it_is_parsed() -> None:
    limit = 8 * MIB
    text = b'["0.5.11","20250101000000","[4,15,{}]","[1,\\"p1\\",\\"a\\"]","","","","","",""' + \
        b',[0,false,"MoveCards","[]"]' * 150_000 + b"]"  # 4.5 MB: 750,000 items by the count
    why, peak = refused(qcompress(text), max_bytes=limit)
    assert why.startswith("not a FreeKill client replay: the recording (JSON) holds up to ")
    assert peak < 30  # the text (4.5 MB) and its inflation; never parsed
    assert f"more than the {max_items(limit)} it may: refused before it is parsed" in why
    payload = '[' + '[],' * 40_000 + '[]]'
    with pytest.raises(FreeKillFormatError, match=r"entry \[10\] \(MoveCards\) payload holds up to 80003 items"):
        read_fkrep(qcompress(json.dumps(["0.5.11", "20250101000000", "[4,15,{}]", '[1,"p1","a"]', "", "", "", "",
                                         "", "", [0, False, "MoveCards", payload]]).encode()))


def test_json_items_counts_at_least_every_item() -> None:
    for text in ['[]', '[[],[],{}]', '{"a":1,"b":[1,2,{"c":null}]}', '"x"', '[1,"a,b",[]]', '{}']:
        value = json.loads(text)

        def count(v: object) -> int:
            if isinstance(v, list):
                return 1 + sum(count(x) for x in v)
            if isinstance(v, dict):
                return 1 + sum(1 + count(x) for x in v.values())
            return 1
        assert json_items(text) >= count(value), text
        assert json_items(text.encode()) == json_items(text)


def test_cbor_counts_items() -> None:
    assert cbor.decode_counted(cbor.encode([1, [2, 3], {"a": None}])) == ([1, [2, 3], {"a": None}], 8)
    with pytest.raises(cbor.CborError, match="more than 7 items at byte"):
        cbor.decode(cbor.encode([1, [2, 3], {"a": None}]), max_items=7)


# ------------------------------------------------------------------------------ real records

def test_real_records_are_far_inside_the_bounds() -> None:
    """The densest real transcript has one counted item per 8 bytes (over the 139 FreeKill games we
    have; here the test games): so any real transcript up to half the limit is read; the longest
    line holds 848 items of the 65,536 one may."""
    densest = 1e9
    for game in GAMES:
        raw = lzma.decompress((DATA / f"{game}.xz").read_bytes())
        charged = 0
        for text in raw.splitlines():
            items = json_items(text)
            assert items <= 848 and len(text) < 5_000
            kind = text.split(b'"kind": "', 1)[1].split(b'"', 1)[0].decode() if b'"kind": "' in text else ""
            cmd = text.split(b'"cmd": "', 1)[1].split(b'"', 1)[0].decode() if b'"cmd": "' in text else ""
            kept = kind == "meta" or needed({"ai_reply": "reply"}.get(kind, kind), cmd)
            charged += items if kept else 1
        densest = min(densest, len(raw) / charged)
    assert densest > BYTES_PER_ITEM / 2


def test_dropping_what_the_converter_does_not_read_changes_no_log() -> None:
    """read_transcript(keep=needed) keeps the data of the messages convert.py reads and no other:
    every test game converts to the same log either way (if the converter reads a new message,
    api.READ_* must name it, or this fails)."""
    for game in GAMES:
        raw = lzma.decompress((DATA / f"{game}.xz").read_bytes())
        whole = read_transcript(io.BytesIO(raw)).messages
        kept = read_transcript(io.BytesIO(raw), keep=needed).messages
        assert sum(m.data is None for m in kept) > sum(m.data is None for m in whole)
        assert convert(kept, version="88a912f1").log == convert(whole, version="88a912f1").log, game


def test_the_limits_are_what_the_docs_say() -> None:
    assert (BYTES_PER_ITEM, MAX_LINE_BYTES, MAX_LINE_ITEMS) == (16, MIB, 65_536)
    assert max_items(64 * MIB) == 4 * MIB and max_items(1000) == MAX_LINE_ITEMS


# ------------------------------------------------------------------------------ issue 43: every container

def test_the_second_audits_replay_of_one_byte_chunks_is_refused() -> None:
    """N2: a 64,241-byte .fk.rep, an indefinite-length byte string of 1-byte chunks (63 MiB unpacked), took a
    worker to 2.9 GiB: its chunks were not items. Each is now counted, before it is read."""
    raw = b"\x5f" + b"\x41a" * ((63 * MIB - 2) // 2) + b"\xff"
    bomb = len(raw).to_bytes(4, "big") + zlib.compress(raw, 9)
    del raw
    assert len(bomb) == 64_241
    why, peak = refused(bomb)
    assert why == ("not a FreeKill client replay: the recording holds more items than the whole recording may "
                   f"({max_items(DEFAULT_MAX_BYTES)}): refused before it is read whole")
    assert peak < 160  # its 63 MiB inflated (and copied once), and 4 MiB of chunks read: 126 MiB measured


@pytest.mark.parametrize(("head", "chunk"), [(b"\x5f", b"\x41a"), (b"\x7f", b"\x61a"), (b"\x5f", b"\x40"),
                                             (b"\x7f", b"\x60")],
                         ids=["bytes", "text", "empty bytes", "empty text"])
def test_an_indefinite_string_of_chunks_costs_its_items(head: bytes, chunk: bytes) -> None:
    limit = 8 * MIB
    bomb = qcompress(head + chunk * ((limit - 100) // len(chunk)) + b"\xff", 9)
    why, peak = refused(bomb, max_bytes=limit)
    assert why.endswith(f"more items than the whole recording may ({max_items(limit)}): refused before it is read "
                        "whole")
    assert peak < 30  # the 8 MiB inflated and copied, half a million chunks' bytes; as a list: 350 MiB
    payload = head + chunk * 70_000 + b"\xff"  # one message: refused at its item limit
    why, peak = refused(qcompress(cbor.encode(fkrep_items([[0, False, "MoveCards", payload]]))))
    assert why.endswith(f"payload holds more than {MAX_LINE_ITEMS} items, more than any FreeKill message holds: "
                        "refused before it is read whole")


def test_nested_indefinite_maps_are_counted() -> None:
    """{0: {}} as indefinite-length maps, 3 items in 5 bytes, at the top and in payloads."""
    limit = 8 * MIB
    top = cbor.encode(fkrep_items([]))
    bomb = qcompress(b"\x9f" + top[1:] + b"\xbf\x00\xbf\xff\xff" * (limit // 5 - 100) + b"\xff", 9)
    why, peak = refused(bomb, max_bytes=limit)
    assert why.endswith(f"the recording holds more items than the whole recording may ({max_items(limit)}): "
                        "refused before it is read whole")
    assert peak < 72 * max_items(limit) / MIB + 2 * limit / MIB
    payload = b"\xbf" + b"".join(b"\x19" + k.to_bytes(2, "big") + b"\xbf\xff" for k in range(30_000)) + b"\xff"
    why, _ = refused(qcompress(cbor.encode(fkrep_items([[0, False, "MoveCards", payload]]))))
    assert why.endswith(f"payload holds more than {MAX_LINE_ITEMS} items, more than any FreeKill message holds: "
                        "refused before it is read whole")


def test_deep_nesting_is_refused_in_every_container() -> None:
    deep_cbor = qcompress(cbor.encode(fkrep_items([]))[:-1] + b"\x81" * 200 + b"\x00")
    assert "nesting deeper than 128 levels" in refused(deep_cbor)[0]
    payload = b"\x81" * 200 + b"\x00"
    assert "nesting deeper than 128 levels" in refused(qcompress(cbor.encode(fkrep_items([[0, False, "MoveCards",
                                                                                           payload]]))))[0]
    deep_json = b'["0.5.11",' + b"[" * 100_000 + b"]" * 100_000 + b"]"
    assert "is not JSON text: maximum recursion depth exceeded" in refused(qcompress(deep_json))[0]
    deep_line = META + line(2, "MoveCards", b"[" * 50_000 + b"]" * 50_000)
    assert "line 2: not JSON (maximum recursion depth exceeded" in refused(deep_line)[0]


def test_huge_declared_lengths_allocate_nothing() -> None:
    top = cbor.encode(fkrep_items([]))
    for head in (b"\x9b", b"\xbb", b"\x5b", b"\x7b"):  # 2**64-1 items, pairs, bytes, characters
        why, peak = refused(qcompress(b"\x9f" + top[1:] + head + b"\xff" * 8 + b"\xff"))
        assert "cannot fit in the" in why or "exceeds the" in why, why
        assert peak < 1
    why, peak = refused((64 * MIB).to_bytes(4, "big") + zlib.compress(b"[" * 1000))
    assert why.endswith("the qCompress header declares 67108864 bytes, the zlib stream holds 1000")
    assert peak < 1


def test_a_bignum_key_is_refused_not_a_crash() -> None:
    """A payload {bignum: 0}: its key as a string was a ValueError out of the importer."""
    key = b"\xc2\x59\x10\x00" + b"\x01" * 4096
    why, _ = refused(qcompress(cbor.encode(fkrep_items([[0, False, "MoveCards", b"\xa1" + key + b"\x00"]]))))
    assert why.endswith("payload is not CBOR: a bignum of 4096 bytes, more than the 1024 read at byte 1 of its 4102")


@pytest.mark.parametrize("container", ["cbor", "json"])
def test_a_long_text_is_quoted_short(container: str) -> None:
    """A text item as long as the record (one character past U+FFFF: 4 bytes a character in Python) was quoted
    whole in the refusal: 2.4 GiB for its repr and the message, at 64 MiB."""
    limit = 8 * MIB
    if container == "cbor":  # (its repr: 4 characters a NUL)
        text = "\U0001F600" + "\0" * (limit - 200)
        raw = b"\x8a" + cbor.encode("0.5.22") + cbor.encode(text) + b"\x60" * 8
    else:  # (JSON writes a NUL in 6 bytes)
        text = "\U0001F600" + "a" * (limit - 200)
        raw = json.dumps(["0.5.11", text, "", "", "", "", "", "", "", ""], ensure_ascii=False).encode()
    why, peak = refused(qcompress(raw), max_bytes=limit)
    start = "\\x00\\x00" if container == "cbor" else "aa"
    assert why.startswith(f"not a FreeKill client replay: item [1] '😀{start}")
    assert why.endswith(f"… ({len(text)} characters) is neither a date %Y%m%d%H%M%S nor "
                        "date.name.mode.general.role.winners")
    assert len(why) < 500
    # the record, and the text in Python (JSON's twice: the record decoded, and the string parsed from it)
    assert peak < 9 * limit / MIB + 5
    dots = qcompress(b"\x8a" + cbor.encode("0.5.22") + cbor.encode("." * (limit - 100)) + b"\x60" * 8)
    why, peak = refused(dots, max_bytes=limit)  # item [1] of a million dots is not split a million times
    assert "… (8388508 characters) is neither a date" in why and peak < 4 * limit / MIB


def test_escaped_brackets_in_old_payloads_are_counted() -> None:
    """A JSON replay's payloads are strings holding JSON text: brackets written as escapes (\\u005b) were
    counted by no one but each payload, so many payloads just under a message's items held more than the
    record may."""
    limit = 8 * MIB
    payload = "\\u005b" + "\\u005b\\u005d\\u002c" * 32_000 + "\\u005b\\u005d\\u005d"  # 32,001 lists, 64,005 counted
    one = ',[0,false,"MoveCards","' + payload + '"]'
    text = '["0.5.11","20250101000000","[4,15,{}]","[1,\\"p1\\",\\"a\\"]","","","","","",""' + one * 14 + "]"
    why, peak = refused(qcompress(text.encode()), max_bytes=limit)
    assert why.startswith("not a FreeKill client replay: the recording (JSON) holds up to ")
    assert why.endswith(f"items, more than the {max_items(limit)} it may: refused before it is parsed")
    assert peak < 20
    assert json_nested_items(b'["\\u005B\\u005d\\u002C\\u003a\\u007b"]') == json_items(b'["[],:{"]')


def test_an_xz_dictionary_past_the_limit_is_refused_before_it_is_allocated() -> None:
    """An xz file declares its dictionary, which the decoder allocated whole: 10 KB took 1.5 GiB."""
    bomb = xz_declaring(META)  # (written by xz with that dictionary, it takes the encoder many times it)
    assert lzma.decompress(bomb) == META and len(bomb) < 200
    why, peak = refused(bomb)
    assert why == ("the xz input needs more than 72 MiB to unpack (the dictionary it declares), more than a record "
                   "under this limit may: pack it with xz -9 or less")
    assert peak < 1
    assert xz_memory(8 * MIB) == 72 * MIB and xz_memory(200 * MIB) == 208 * MIB
    nine = lzma.compress(META, preset=9 | lzma.PRESET_EXTREME)  # xz -9e: a 64 MiB dictionary, read
    assert "no seating" in refused(nine)[0]
    assert "no seating" in refused(nine + lzma.compress(line(2, "Animate", b"[]")) + b"\0" * 4 + b"junk")[0]
