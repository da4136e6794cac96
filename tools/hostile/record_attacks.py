"""FreeKill records built to cost a worker what they may not (issue 43, N2, and the same kind of hole in every
container the importer reads: docs/freekill.md#limits). Each is uploaded by gRPC (UploadLog, a foreign record)
and, for the second audit's own file, by the viewer too; each must be refused with INVALID_ARGUMENT (400)
saying why, the worker that read it within the memory bound the harness checks (no worker killed by the
deadline either: a refusal past it is DEADLINE_EXCEEDED, and not held). The interface: tools/hostile/base.py.

- ``record-chunked-bytes`` (N2): the second audit's 64,241-byte .fk.rep, an indefinite-length CBOR byte string
  of one-byte chunks (63 MiB unpacked), which took a worker to 2.9 GiB, by gRPC and then by the viewer;
  ``record-chunked-text`` the same as a text string. Quick: one message's payload of 100,000 chunks. (One
  after the other: reading a record to its 4 M items keeps a worker busy 4–9 s here, and two at once left the
  probe's calls no worker for longer than its 5 s: the workers' count, not the memory, which is measured.)
- ``record-nested-indefinite-maps``: {0: {}} as indefinite-length maps to the record's size, three items in five
  bytes. Quick: one payload of them, past a message's items.
- ``record-deep-nesting``: CBOR 200 levels deep (in the record and in a payload), an old JSON replay and a
  transcript line 100,000 deep.
- ``record-huge-lengths``: CBOR heads declaring 2**64 - 1 items, pairs, bytes and characters; qCompress declaring
  64 MiB with 1 KB behind; an xz file declaring a 1.5 GiB dictionary; a 4 KB bignum as a map key.
- ``record-escaped-json``: an old JSON replay whose payloads write their brackets as escapes (\\u005b), each
  payload within a message's items, all of them past the record's.
- ``record-long-text``: a text item the record's size, one character past U+FFFF (4 bytes a character in
  Python) and the rest NULs (4 characters each when quoted).
"""

from __future__ import annotations

import lzma
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc

from tools.hostile.base import Attack, Context, Outcome

MIB = 1 << 20
OCTETS = {"Content-Type": "application/octet-stream"}


def _qcompress(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + zlib.compress(raw, 9)


def xz_declaring(data: bytes, dictionary_code: int = 37) -> bytes:
    """``data`` as xz whose LZMA2 filter declares the dictionary of ``dictionary_code`` (37: 1.5 GiB; a size is
    (2 + code % 2) << (code // 2 + 11)), made with a small one and the block header patched (its CRC32 too): xz's
    encoder would allocate the dictionary many times over to write one."""
    packed = bytearray(lzma.compress(data, format=lzma.FORMAT_XZ, preset=0))
    start = 12  # the block header, after the stream header
    size = (packed[start] + 1) * 4
    flags, pos = packed[start + 1], start + 2
    for present in (0x40, 0x80):  # the compressed and uncompressed sizes, when the header has them (varints)
        if flags & present:
            while packed[pos] & 0x80:
                pos += 1
            pos += 1
    assert packed[pos : pos + 2] == b"\x21\x01", "not one LZMA2 filter with one byte of properties"
    packed[pos + 2] = dictionary_code
    packed[start + size - 4 : start + size] = zlib.crc32(bytes(packed[start : start + size - 4])).to_bytes(4, "little")
    return bytes(packed)


def _header(entries: bytes = b"") -> bytes:
    """A CBOR recording's header (10 items) and ``entries`` (raw CBOR items), as one indefinite-length array."""
    from importers.freekill import cbor

    head = cbor.encode(["0.5.22", "20250101000000", cbor.encode([4, 15, {}]), cbor.encode([1, "p1", "liubei"]), "",
                        "normal", "", "", "", ""])
    return b"\x9f" + head[1:] + entries + b"\xff"


def _entry(payload: bytes) -> bytes:
    from importers.freekill import cbor

    return cbor.encode([0, False, "MoveCards", payload])


def _upload(ctx: Context, records: list[tuple[str, bytes]], by_http: bool = False,
            together: bool = True) -> list[tuple[str, str]]:
    """Each record by gRPC's UploadLog (and the viewer too, ``by_http``), all at once (or one after the other):
    (code, details) each."""
    from sgsverify.v1 import service_pb2 as spb
    from sgsverify.v1 import service_pb2_grpc as spb_grpc

    results: list[tuple[str, str]] = []
    lock = threading.Lock()
    md = ctx.metadata("attacker")

    def grpc_one(name: str, data: bytes) -> None:
        request = spb.UploadLogRequest(foreign=spb.ForeignLog(engine="freekill", name=name, data=data))
        try:
            with ctx.channel() as channel:
                spb_grpc.VerifierServiceStub(channel).UploadLog(  # type: ignore[no-untyped-call]
                    iter([request]), metadata=md, timeout=180)
            got = ("OK", "")
        except grpc.RpcError as err:
            got = (str(err.code().name), err.details() or "")
        with lock:
            results.append(got)

    def http_one(name: str, data: bytes) -> None:
        try:
            with ctx.http("attacker", timeout=180) as client:
                answer = client.post("/api/replays", params={"engine": "freekill", "name": name}, content=data,
                                     headers=OCTETS)
            body: Any = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else {}
            got = (f"HTTP {answer.status_code}", str(body.get("error", "")) if isinstance(body, dict) else "")
        except Exception as err:  # (a reset connection is an answer too)
            got = ("HTTP failed", f"{type(err).__name__}: {err}")
        with lock:
            results.append(got)

    jobs: list[tuple[Callable[[str, bytes], None], str, bytes]] = [(grpc_one, n, d) for n, d in records]
    if by_http:
        jobs += [(http_one, n, d) for n, d in records]
    threads = [threading.Thread(target=job, args=(name, data)) for job, name, data in jobs]
    for t in threads:
        t.start()
        if not together:
            t.join()
    for t in threads:
        t.join()
    return results


def _judged(ctx: Context, what: str, records: list[tuple[str, bytes]], says: list[str],
            by_http: bool = False, together: bool = True) -> Outcome:
    """Upload ``records``; held when every answer is INVALID_ARGUMENT (400) and says one of ``says``."""
    started = time.monotonic()
    results = _upload(ctx, records, by_http, together)
    took = time.monotonic() - started
    refused = {"INVALID_ARGUMENT", "HTTP 400"}
    held = all(code in refused and any(s in details for s in says) for code, details in results)
    codes = ", ".join(f"{n} {code}" for code, n in sorted(Counter(code for code, _ in results).items()))
    sizes = ", ".join(f"{len(data):,} B" for _, data in records)
    wrong = [f"{code}: {details[:160]}" for code, details in results
             if code not in refused or not any(s in details for s in says)]
    how = (", by gRPC and the viewer" + ("" if together else ", one after the other")) if by_http else ""
    return Outcome(f"{what} ({sizes}{how})",
                   f"{codes} in {took:.1f} s" + (f"; unexpected: {wrong[0]}" if wrong else ""), held)


ITEMS_PAST = "more items than the whole recording may"
PAYLOAD_PAST = "more than 65536 items, more than any FreeKill message holds"


def chunked(ctx: Context, head: bytes, chunk: bytes, kind: str) -> Outcome:
    if ctx.quick:
        payload = head + chunk * 100_000 + b"\xff"
        return _judged(ctx, f"a .fk.rep whose payload is an indefinite-length {kind} of 100,000 one-byte chunks",
                       [("chunks.fk.rep", _qcompress(_header(_entry(payload))))], [PAYLOAD_PAST])
    raw = head + chunk * ((63 * MIB - 2) // len(chunk)) + b"\xff"  # the second audit's: 64,241 bytes packed
    return _judged(ctx, f"the second audit's .fk.rep: an indefinite-length {kind} of one-byte chunks, 63 MiB "
                   "unpacked", [("chunks.fk.rep", _qcompress(raw))], [ITEMS_PAST], by_http=kind == "byte string",
                   together=False)


def nested_maps(ctx: Context) -> Outcome:
    unit = b"\xbf\x00\xbf\xff\xff"  # {0: {}}, both indefinite-length
    if ctx.quick:
        payload = b"\xbf" + b"".join(b"\x19" + k.to_bytes(2, "big") + b"\xbf\xff" for k in range(30_000)) + b"\xff"
        return _judged(ctx, "a .fk.rep payload of 30,000 indefinite-length maps in one",
                       [("maps.fk.rep", _qcompress(_header(_entry(payload))))], [PAYLOAD_PAST])
    raw = _header(unit * ((ctx.limits.max_record_bytes - 1000) // len(unit)))
    return _judged(ctx, f"a .fk.rep of {len(raw) // len(unit):,} indefinite-length maps {{0: {{}}}}",
                   [("maps.fk.rep", _qcompress(raw))], [ITEMS_PAST])


def deep_nesting(ctx: Context) -> Outcome:
    deep_cbor = _qcompress(_header(b"\x81" * 200 + b"\x00"))
    deep_payload = _qcompress(_header(_entry(b"\x81" * 200 + b"\x00")))
    deep_json = _qcompress(b'["0.5.11",' + b"[" * 100_000 + b"]" * 100_000 + b"]")
    deep_line = (b'{"seq": 1, "kind": "meta", "players": 4}\n{"seq": 2, "kind": "notify", "to": [1], "cmd": '
                 b'"MoveCards", "data": ' + b"[" * 30_000 + b"]" * 30_000 + b"}\n")  # (within a line's items)
    return _judged(ctx, "CBOR 200 levels deep (the record, a payload), an old JSON replay 100,000 deep and a "
                   "transcript line 30,000 deep", [("deep.fk.rep", deep_cbor), ("deep-payload.fk.rep", deep_payload),
                                    ("deep-json.fk.rep", deep_json), ("deep.jsonl", deep_line)],
                   ["nesting deeper than 128 levels", "maximum recursion depth exceeded"])


def huge_lengths(ctx: Context) -> Outcome:
    records = [(f"declared-{kind}.fk.rep", _qcompress(_header(head + b"\xff" * 8)))
               for kind, head in (("items", b"\x9b"), ("pairs", b"\xbb"), ("bytes", b"\x5b"), ("chars", b"\x7b"))]
    records.append(("qcompress.fk.rep", (64 * MIB).to_bytes(4, "big") + zlib.compress(b"[" * 1000)))
    meta = b'{"seq": 1, "kind": "meta", "players": 4}\n'
    records.append(("dictionary.jsonl.xz", xz_declaring(meta)))
    records.append(("bignum.fk.rep", _qcompress(_header(_entry(b"\xa1\xc2\x59\x10\x00" + b"\x01" * 4096 + b"\x00")))))
    return _judged(ctx, "CBOR heads declaring 2**64-1 items, pairs, bytes, characters; qCompress declaring 64 MiB; "
                   "xz declaring a 1.5 GiB dictionary; a 4 KB bignum key", records,
                   ["cannot fit in the", "exceeds the", "the zlib stream holds 1000", "MiB to unpack (the dictionary",
                    "a bignum of 4096 bytes"])


def escaped_json(ctx: Context) -> Outcome:
    payload = "\\u005b" + "\\u005b\\u005d\\u002c" * 32_000 + "\\u005b\\u005d\\u005d"  # 32,001 lists each
    one = ',[0,false,"MoveCards","' + payload + '"]'
    count = 70  # 2.2 M lists, 4.5 M by the count: past the record's 4 M (at 64 MiB) in 40 MB
    text = '["0.5.11","20250101000000","[4,15,{}]","[1,\\"p1\\",\\"a\\"]","","","","","",""' + one * count + "]"
    return _judged(ctx, f"an old JSON replay of {count} payloads of 32,001 lists written as escapes",
                   [("escaped.fk.rep", _qcompress(text.encode()))], ["refused before it is parsed"])


def long_text(ctx: Context) -> Outcome:
    from importers.freekill import cbor

    size = (ctx.limits.max_record_bytes if not ctx.quick else 8 * MIB) - 200
    raw = b"\x8a" + cbor.encode("0.5.22") + cbor.encode("\U0001F600" + "\0" * (size - 4)) + b"\x60" * 8
    return _judged(ctx, f"a .fk.rep whose item [1] is a text of {size // MIB} MiB (one character past U+FFFF, "
                   "then NULs)", [("text.fk.rep", _qcompress(raw))], ["characters) is neither a date"])


ATTACKS = [
    Attack("record-chunked-bytes", None, lambda ctx: chunked(ctx, b"\x5f", b"\x41a", "byte string"), seconds=120.0),
    Attack("record-chunked-text", None, lambda ctx: chunked(ctx, b"\x7f", b"\x61a", "text string"), quick=False,
           seconds=120.0),
    Attack("record-nested-indefinite-maps", None, nested_maps, seconds=120.0),
    Attack("record-deep-nesting", None, deep_nesting),
    Attack("record-huge-lengths", None, huge_lengths),
    Attack("record-escaped-json", None, escaped_json),
    Attack("record-long-text", None, long_text, quick=False, seconds=60.0),
]
