"""The fuzz harness (docs/fuzzing.md): inputs that a hostile or careless client would send, through the
offline path (``load_log`` + ``verify``, and ``sgs-verify check --json``) and every RPC of the service on a
real server, with the oracles that decide whether an answer is clean.

A case is ``(family, seed, index)``: its input is made by the family's generator from a ``random.Random``
seeded with exactly that, so any finding is reproduced by ``tools/fuzz.py --family F --seed S --start I
--cases 1`` (and its input is written to the findings folder too).

Families (``FAMILIES``):
- offline: ``check-junk`` (random bytes and malformed protobuf wire data), ``check-json`` (JSON junk: deep,
  huge, surrogates, wrong types, GameLog-shaped), ``check-truncate`` and ``check-bitflip`` (of valid binary and
  JSON logs), ``check-absurd`` (valid logs with absurd field values: huge and negative numbers, NUL, huge
  strings, unknown enums, many repeated entries), ``check-cli`` (``check --json`` on files of all those);
- service: ``rpc-raw`` (malformed request bytes to every method: junk, truncations and bit flips of valid
  requests, deep nesting), ``rpc-absurd`` (valid requests of every method with absurd field values),
  ``rpc-log`` (VerifyLog with the offline families' logs, binary, JSON and foreign), ``rpc-query`` (bad
  page tokens, filters, ids and run names for ListReplays, GetReplay, DeleteReplay and Regress),
  ``rpc-stream`` (UploadLog and VerifyLive cut, reordered or malformed midway).

Oracles: offline, only ``LogFormatError`` may come out of ``load_log`` and nothing out of ``verify``; the
CLI exits 0, 1 or 2 with one JSON report per file and no traceback. Service: every answer is OK or one of
the documented status codes (``CLEAN_CODES``) — never UNKNOWN, INTERNAL or another, never a hang past the
deadline, never a dead server — and nothing is stored half-written (``ServerUnderTest.check_store``).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor as gdesc
from google.protobuf import json_format
from google.protobuf.message import Message

from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from verifier import LogFormatError, verify
from verifier.logio import MAX_LOG_EVENTS, parse_log

ROOT = Path(__file__).resolve().parents[1]
SERVICE = "/sgsverify.v1.VerifierService/"

# What a clean answer of the service may be (docs/service.md, "Errors"). CANCELLED only where the fuzzer
# itself cancelled the call; DEADLINE_EXCEEDED only when the server says so before the caller's deadline.
CLEAN_CODES = frozenset({grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
                         grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED,
                         grpc.StatusCode.DEADLINE_EXCEEDED})
# How long one offline case may take before it counts as a hang (plus a second per MB of input: a 60 MB JSON
# log takes half a minute to parse), and an RPC past the server's deadline.
OFFLINE_SECONDS = 30.0
RPC_SECONDS = 60.0
SERVER_DEADLINE = 20.0


# ============================================================================ the corpus of valid inputs

@dataclass(frozen=True, slots=True)
class Corpus:
    """Valid logs (and their encodings) the mutations start from: short complete self-play games."""

    logs: tuple[pb.GameLog, ...]
    binary: tuple[bytes, ...]
    json: tuple[bytes, ...]


_corpus: Corpus | None = None


def corpus() -> Corpus:
    global _corpus
    if _corpus is None:
        from clients.selfplay import play_game

        logs = [play_game(seed, players) for seed, players in ((3, 5), (1, 4), (2, 4))]
        logs.append(play_game(1, 4, generals=True))
        logs.append(play_game(1, 4, mode=pb.MODE_HEGEMONY))
        binary = tuple(g.SerializeToString(deterministic=True) for g in logs)
        texts = tuple(json_format.MessageToJson(g, indent=None).encode() for g in logs)
        _corpus = Corpus(tuple(logs), binary, texts)
    return _corpus


# ============================================================================ value and byte generators

INTS = [0, 1, -1, 2, 7, 31, 32, 33, 99, 100, 127, 128, 255, 256, 1000, 65535, 65536, 2**31 - 1, 2**31, -2**31,
        2**32 - 1, 2**32, 2**53 + 1, 2**62, 2**63 - 1, -2**63, 2**64 - 1]
STRINGS = ["", "\0", "a\0b", "\0" * 64, " ", "\n", "\t\r", "'", '"', "\\", "%", "_", "%_%", "'; DROP TABLE replays; --",
           "SLASH_LIMIT", "examples", "identity/standard-1", "\u202e", "\ufeff", "😀", "三国杀", "\x7f", "\x1b[31m",
           "a" * 64, "b" * 65, "c" * 200, "d" * 201, "e" * 1000, "f" * 100_000]


def absurd_int(rng: random.Random, lo: int, hi: int) -> int:
    """A number a field of range [lo, hi] can hold, picked from the edges as often as not."""
    if rng.random() < 0.7:
        candidates = [v for v in INTS if lo <= v <= hi]
        candidates += [lo, hi, lo + 1, hi - 1]
        return rng.choice(candidates)
    return rng.randint(lo, hi)


def absurd_string(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.55:
        return rng.choice(STRINGS)
    if r < 0.9:
        alphabet = "ab\0\u00e9\u4e09\U0001f600 \n\t%_'\"\\"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
    if r < 0.995:
        return rng.choice("xyz\0") * rng.choice([63, 64, 65, 199, 200, 201, 999, 1000, 1001, 10_000])
    return "p" * 5_000_000  # the audit's 5 MB player name


def absurd_bytes(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.5:
        return rng.randbytes(rng.randint(0, 64))
    if r < 0.8:
        return rng.choice([b"", b"\0", b"{", b"{}", b"[]", b"\xff" * 10, b"\x1f\x8b\x08", b"\xfd7zXZ\0"])
    return rng.choice(corpus().binary + corpus().json)


def junk_bytes(rng: random.Random) -> bytes:
    """Random bytes, of a size from empty to a few kilobytes (rarely a few hundred)."""
    size = rng.choice([0, 1, 2, 3, 5, 8, 16, 50, 200, 1000, 4000]) if rng.random() < 0.8 else rng.randint(0, 20_000)
    return rng.randbytes(size)


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 70) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def wire_junk(rng: random.Random, depth: int = 0) -> bytes:
    """Malformed (or nearly well-formed) protobuf wire data: fields of every wire type, invalid ones
    (6, 7), lengths past the end, overlong varints, unmatched groups and deep nesting."""
    out = bytearray()
    for _ in range(rng.randint(0, 12)):
        number = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16, 100, 2**29 - 1, 0])
        wire = rng.choice([0, 0, 1, 2, 2, 2, 3, 4, 5, 6, 7])
        out += _varint(number << 3 | wire)
        if wire == 0:
            out += _varint(rng.choice(INTS)) if rng.random() < 0.9 else b"\xff" * rng.randint(1, 12)
        elif wire == 1:
            out += rng.randbytes(rng.choice([8, 8, 8, 3]))
        elif wire == 5:
            out += rng.randbytes(rng.choice([4, 4, 4, 2]))
        elif wire == 2:
            if depth < 120 and rng.random() < 0.3:
                body = wire_junk(rng, depth + 1)
            elif rng.random() < 0.3:
                body = rng.choice(corpus().binary)[: rng.randint(0, 300)]
            else:
                body = rng.randbytes(rng.randint(0, 40))
            length = len(body) if rng.random() < 0.85 else rng.choice([len(body) + 1, 2**31, 2**64 - 1, 0])
            out += _varint(length) + body
    return bytes(out)


def deep_message(rng: random.Random) -> bytes:
    """A length-delimited field nested hundreds of levels deep (protobuf's recursion limit is 100)."""
    levels = rng.choice([50, 99, 100, 101, 200, 1000, 5000])
    field_number = rng.choice([1, 2, 3])
    data = b""
    for _ in range(levels):
        data = _varint(field_number << 3 | 2) + _varint(len(data)) + data
    return data


GAMELOG_KEYS = ["header", "events", "seats", "player", "general", "role", "seed", "ruleset", "mode", "recorder",
                "options", "packages", "generals", "useCard", "use_card", "card", "id", "seat", "targets", "draw",
                "cards", "endPhase", "gameOver", "winners", "side", "origin", "respond", "discard", "playCard",
                "skill", "reveal", "kingdom", "outcome", "judgment", "damage", "amount", "source"]


def json_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 6 or r < 0.35:
        return rng.choice([None, True, False, 0, -1, 1.5, 1e308, -1e308, 2**64, -2**70, 10**30, "x", "", "\0",
                           "\ud800", "NaN", "Infinity", "-0", "1e5", "0x10", 5, 7, 2**31, "ROLE_LORD", "MODE_HEGEMONY",
                           "MODE_UNSPECIFIED_X", "SUIT_SPADE", 99999])
    if r < 0.6:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {rng.choice(GAMELOG_KEYS) if rng.random() < 0.85 else absurd_string(rng)[:30]: json_value(rng, depth + 1)
            for _ in range(rng.randint(0, 5))}


def json_junk(rng: random.Random) -> bytes:
    """JSON that is no GameLog, or only nearly one: wrong types, deep nesting, huge numbers, surrogates,
    duplicate keys, trailing garbage, bytes that are not UTF-8."""
    kind = rng.randrange(9)
    if kind == 0:
        depth = rng.choice([10, 100, 999, 1000, 5000, 50_000])
        opener = rng.choice(["[", '{"header":', '{"events":['])
        return ("{" + '"header":' * 0 + opener * depth).encode()[: 2_000_000] if rng.random() < 0.5 else \
            ('{"header": {}, "events": ' + "[" * depth + "]" * depth + "}").encode()
    if kind == 1:
        doc: Any = {"header": json_value(rng), "events": json_value(rng)}
    elif kind == 2:
        doc = json_value(rng)
    elif kind == 3:
        text = rng.choice(corpus().json).decode()
        # replace one JSON value by junk
        spots = [m.start() for m in re.finditer(r": ", text)]
        if spots:
            at = rng.choice(spots) + 2
            end = at
            while end < len(text) and text[end] not in ",}]":
                end += 1
            text = text[:at] + json.dumps(json_value(rng)) + text[end:]
        return text.encode("utf-8", "surrogatepass")
    elif kind == 4:
        return rng.choice([b'{"header": {}, "events": "\\ud800"}', b'{"header": {"seed": "-1"}}',
                           b'{"header": {"seed": "18446744073709551616"}}', b'{"header": {"mode": 99}}',
                           b'{"header": {}, "header": {}}', b'{"header": {}}garbage', b'\xef\xbb\xbf{"header": {}}',
                           b'{"header": {"seats": [{"player": "\\u0000"}]}}', b'{"header": null, "events": null}',
                           b'{"header": {"seed": 1e400}}', b'{"header": {"seed": NaN}}', b'{"header": {"seed": 1.5}}',
                           b'{"events": [{"useCard": {"card": {"id": 4294967296}}}], "header": {}}',
                           b'{"header": {"ruleset": "' + b"r" * 100_000 + b'"}}', b'{\xff\xfe}', b'{"\xc3\x28": 1}',
                           b'{"header": {"seats": [' + b'{},' * 10_000 + b'{}]}}'])
    elif kind == 5:
        raw = json.dumps({"header": json_value(rng), "events": [json_value(rng) for _ in range(rng.randint(0, 30))]})
        cut = rng.randint(0, len(raw))
        return raw[:cut].encode()
    elif kind == 6:
        base = bytearray(rng.choice(corpus().json))
        for _ in range(rng.randint(1, 5)):
            base[rng.randrange(len(base))] = rng.choice(b'{}[]",:\\0 \xff\x00u')
        return bytes(base)
    elif kind == 7:
        doc = {"header": {k: json_value(rng) for k in rng.sample(["seed", "ruleset", "mode", "seats", "recorder",
                                                                   "options", "origin"], rng.randint(1, 4))},
               "events": [{rng.choice(GAMELOG_KEYS): json_value(rng)} for _ in range(rng.randint(0, 10))]}
    else:
        return b" \n\t" * rng.randint(0, 3) + b"{" + rng.randbytes(rng.randint(0, 100))
    return json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")


def truncation(rng: random.Random) -> bytes:
    data = rng.choice(corpus().binary + corpus().json)
    if rng.random() < 0.2:
        return data[: rng.randint(0, 40)]
    return data[: rng.randint(0, len(data))]


def bitflip(data: bytes, rng: random.Random) -> bytes:
    """A few bits flipped, bytes replaced, inserted or deleted, or a span repeated."""
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 4, 8, 16])):
        if not buf:
            buf.append(rng.randrange(256))
        op = rng.randrange(6)
        at = rng.randrange(len(buf))
        if op <= 2:
            buf[at] ^= 1 << rng.randrange(8)
        elif op == 3:
            buf[at] = rng.choice([0, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif op == 4:
            del buf[at: at + rng.randint(1, 8)]
        else:
            span = bytes(buf[at: at + rng.randint(1, 64)])
            buf[at:at] = span * rng.randint(1, 4)
    return bytes(buf)


def flipped_log(rng: random.Random) -> bytes:
    c = corpus()
    return bitflip(rng.choice(c.binary) if rng.random() < 0.75 else rng.choice(c.json), rng)


# ============================================================================ absurd values in valid messages

_INT_RANGES = {
    gdesc.FieldDescriptor.TYPE_INT32: (-2**31, 2**31 - 1), gdesc.FieldDescriptor.TYPE_SINT32: (-2**31, 2**31 - 1),
    gdesc.FieldDescriptor.TYPE_SFIXED32: (-2**31, 2**31 - 1), gdesc.FieldDescriptor.TYPE_INT64: (-2**63, 2**63 - 1),
    gdesc.FieldDescriptor.TYPE_SINT64: (-2**63, 2**63 - 1), gdesc.FieldDescriptor.TYPE_SFIXED64: (-2**63, 2**63 - 1),
    gdesc.FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1), gdesc.FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    gdesc.FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1), gdesc.FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _absurd_scalar(fd: gdesc.FieldDescriptor, rng: random.Random) -> Any:
    if fd.type in _INT_RANGES:
        return absurd_int(rng, *_INT_RANGES[fd.type])
    if fd.type == gdesc.FieldDescriptor.TYPE_ENUM:
        assert fd.enum_type is not None
        known = [v.number for v in fd.enum_type.values]
        return rng.choice(known) if rng.random() < 0.4 else absurd_int(rng, -2**31, 2**31 - 1)
    if fd.type == gdesc.FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if fd.type == gdesc.FieldDescriptor.TYPE_STRING:
        return absurd_string(rng)
    if fd.type == gdesc.FieldDescriptor.TYPE_BYTES:
        return absurd_bytes(rng)
    if fd.type in (gdesc.FieldDescriptor.TYPE_DOUBLE, gdesc.FieldDescriptor.TYPE_FLOAT):
        return rng.choice([0.0, -1.0, 1e308, float("inf"), float("nan")])
    raise AssertionError(fd.type)


def _is_repeated(fd: gdesc.FieldDescriptor) -> bool:
    if hasattr(fd, "is_repeated"):
        return bool(fd.is_repeated)
    return bool(getattr(fd, "label") == gdesc.FieldDescriptor.LABEL_REPEATED)  # noqa: B009 (older protobuf)


# The most bytes one mutation adds (more than any limit: a 64 MiB log, 16 MiB messages), so that the fuzzer's
# own inputs stay a few hundred MB at most.
MAX_ADDED_BYTES = 80 * 1024 * 1024


def mutate_message(msg: Message, rng: random.Random, depth: int = 0) -> None:
    """Set one field somewhere in ``msg`` (a random path down its set sub-messages) to an absurd value, or
    fill a repeated field with many entries, or clear it."""
    fields: list[Any] = list(msg.DESCRIPTOR.fields)
    if not fields:
        return
    set_messages = [fd for fd in fields if fd.type == gdesc.FieldDescriptor.TYPE_MESSAGE
                    and (len(getattr(msg, fd.name)) if _is_repeated(fd) else msg.HasField(fd.name))]
    if set_messages and depth < 12 and rng.random() < 0.6:
        fd = rng.choice(set_messages)
        value = getattr(msg, fd.name)
        if _is_repeated(fd):
            if not isinstance(value, Sequence) and hasattr(value, "keys"):  # a map: leave it
                return
            value = value[rng.randrange(len(value))]
        mutate_message(value, rng, depth + 1)
        return
    fd = rng.choice(fields)
    try:
        if _is_repeated(fd):
            target = getattr(msg, fd.name)
            choice = rng.random()
            if choice < 0.25:
                del target[:]
            elif fd.type == gdesc.FieldDescriptor.TYPE_MESSAGE:
                count = rng.choice([1, 2, 40, 1000]) if rng.random() < 0.98 else 100_000
                if len(target) and rng.random() < 0.5:
                    item = target[rng.randrange(len(target))]
                    for _ in range(min(count, 5000, MAX_ADDED_BYTES // max(1, item.ByteSize()))):
                        target.add().CopyFrom(item)
                else:
                    added = 0
                    for _ in range(count):
                        entry = target.add()
                        if rng.random() < 0.3:
                            mutate_message(entry, rng, depth + 1)
                            added += entry.ByteSize()
                            if added > MAX_ADDED_BYTES:
                                break
            else:
                count = rng.choice([1, 3, 40, 1000]) if rng.random() < 0.98 else 200_000
                value = _absurd_scalar(fd, rng)
                if isinstance(value, str | bytes):
                    count = min(count, MAX_ADDED_BYTES // max(1, len(value)))
                target.extend([value] * count)
        elif fd.type == gdesc.FieldDescriptor.TYPE_MESSAGE:
            sub = getattr(msg, fd.name)
            if msg.HasField(fd.name) and rng.random() < 0.3:
                msg.ClearField(fd.name)
            else:
                sub.SetInParent()
                mutate_message(sub, rng, depth + 1)
        else:
            setattr(msg, fd.name, _absurd_scalar(fd, rng))
    except (ValueError, TypeError):
        pass  # a value the field's type refuses (e.g. a NaN in an int): nothing set


def absurd_log(rng: random.Random) -> pb.GameLog:
    log = pb.GameLog()
    log.CopyFrom(rng.choice(corpus().logs))
    for _ in range(rng.choice([1, 1, 2, 3, 5])):
        target: Message = log.header if rng.random() < 0.5 else log
        mutate_message(target, rng)
    return log


def absurd_encoded_log(rng: random.Random) -> bytes:
    log = absurd_log(rng)
    if rng.random() < 0.8:
        return log.SerializeToString()
    try:
        return json_format.MessageToJson(log, indent=None).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError):
        return log.SerializeToString()


# ============================================================================ offline cases

@dataclass(slots=True)
class Outcome:
    """What one case came to: ``label`` is the clean answer ("ok", "verdict", "error:CODE", ...) or, for a
    finding, one of FINDINGS; ``detail`` says what happened."""

    label: str
    detail: str = ""

    @property
    def finding(self) -> bool:
        return self.label in FINDINGS


FINDINGS = frozenset({"crash", "hang", "unknown", "internal", "unexpected"})


class _Timeout(BaseException):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise _Timeout in the main thread after ``seconds`` (a hang detector; off in other threads)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: object) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_bytes(data: bytes) -> Outcome:
    """The offline path of ``sgs-verify check``: parse, refuse a log over the event limit, verify."""
    limit = OFFLINE_SECONDS + len(data) / 1e6
    try:
        with time_limit(limit):
            try:
                log, _ = parse_log(data)
            except LogFormatError as err:
                message = str(err)
                message.encode("utf-8")
                if not message or len(message) > 1000:
                    return Outcome("unexpected", f"error message of {len(message)} characters")
                return Outcome("unreadable")
            if len(log.events) > MAX_LOG_EVENTS:
                return Outcome("too-long")
            replay = verify(log)
            return Outcome("violations" if replay.violation_count else "clean")
    except _Timeout:
        return Outcome("hang", f"more than {limit:.0f} s")
    except RecursionError as err:
        return Outcome("crash", f"RecursionError: {err}")
    except Exception as err:
        return Outcome("crash", f"{type(err).__name__}: {err}"[:2000])


def check_cli(files: Sequence[bytes]) -> Outcome:
    """``sgs-verify check --json`` on files with these bytes (in this process): exit status 0, 1 or 2, one
    report per file, no traceback."""
    from clients import cli

    with tempfile.TemporaryDirectory(prefix="sgsv-fuzz-") as folder:
        paths = []
        for i, data in enumerate(files):
            path = Path(folder) / f"log{i}{'.json' if data.lstrip()[:1] == b'{' else '.pb'}"
            path.write_bytes(data)
            paths.append(str(path))
        out, err = io.StringIO(), io.StringIO()
        try:
            limit = OFFLINE_SECONDS * len(files) + sum(map(len, files)) / 1e6
            with time_limit(limit), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(["check", "--json", *paths])
        except _Timeout:
            return Outcome("hang", "check --json did not end")
        except BaseException as exc:
            return Outcome("crash", f"check --json raised {type(exc).__name__}: {exc}"[:2000])
    if "Traceback" in out.getvalue() + err.getvalue():
        return Outcome("crash", "a traceback: " + (out.getvalue() + err.getvalue())[-2000:])
    if code not in (0, 1, 2):
        return Outcome("unexpected", f"exit status {code}")
    try:
        reports = json.loads(out.getvalue())
    except ValueError:
        return Outcome("unexpected", "stdout is not JSON: " + out.getvalue()[:500])
    if [r.get("file") for r in reports] != paths:
        return Outcome("unexpected", "not one report per file, in order")
    for r in reports:
        if not r["readable"] and not r.get("error"):
            return Outcome("unexpected", "an unreadable file without an error")
    return Outcome(f"exit-{code}")


def offline_input(family: str, rng: random.Random) -> bytes:
    if family == "check-junk":
        r = rng.random()
        return junk_bytes(rng) if r < 0.4 else deep_message(rng) if r < 0.5 else wire_junk(rng)
    if family == "check-json":
        return json_junk(rng)
    if family == "check-truncate":
        return truncation(rng)
    if family == "check-bitflip":
        return flipped_log(rng)
    if family == "check-absurd":
        return absurd_encoded_log(rng)
    raise KeyError(family)


def any_offline_input(rng: random.Random) -> bytes:
    return offline_input(rng.choice(OFFLINE_BYTE_FAMILIES), rng)


OFFLINE_BYTE_FAMILIES = ("check-junk", "check-json", "check-truncate", "check-bitflip", "check-absurd")
OFFLINE_FAMILIES = (*OFFLINE_BYTE_FAMILIES, "check-cli")


def run_offline_case(family: str, rng: random.Random) -> tuple[Outcome, bytes]:
    if family == "check-cli":
        files = [any_offline_input(rng) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            files.append(rng.choice(corpus().binary))
        packed = b"".join(len(f).to_bytes(8, "big") + f for f in files)
        return check_cli(files), packed
    data = offline_input(family, rng)
    return check_bytes(data), data


# ============================================================================ RPC cases

@dataclass(slots=True)
class RpcInput:
    """One call: a method of the service (or health/reflection), its request messages as bytes, and how
    the stream is cut: after ``cancel_after`` messages the client cancels (None: it half-closes)."""

    method: str
    messages: list[bytes]
    cancel_after: int | None = None
    note: str = ""

    def pack(self) -> bytes:
        head = json.dumps({"method": self.method, "cancel_after": self.cancel_after, "note": self.note,
                           "sizes": [len(m) for m in self.messages]}).encode()
        return len(head).to_bytes(4, "big") + head + b"".join(self.messages)

    @staticmethod
    def unpack(data: bytes) -> RpcInput:
        n = int.from_bytes(data[:4], "big")
        head = json.loads(data[4:4 + n])
        at, messages = 4 + n, []
        for size in head["sizes"]:
            messages.append(data[at:at + size])
            at += size
        return RpcInput(head["method"], messages, head["cancel_after"], head["note"])


UNARY = {"VerifyLog", "GetReplay", "ListReplays", "DeleteReplay", "ListRuns"}
CLIENT_STREAM = {"UploadLog"}
BIDI = {"VerifyLive"}
SERVER_STREAM = {"Regress"}
OTHER_METHODS = ["/grpc.health.v1.Health/Check", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                 "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"]
METHODS = ["VerifyLog", "UploadLog", "VerifyLive", "GetReplay", "ListReplays", "DeleteReplay", "Regress", "ListRuns"]


def fuzz_tag(rng: random.Random) -> str:
    return f"fuzz-{rng.getrandbits(40):010x}"


def _game(rng: random.Random) -> pb.GameLog:
    log = pb.GameLog()
    log.CopyFrom(rng.choice(corpus().logs))
    log.header.recorder = fuzz_tag(rng)  # a log not stored yet (its id is new)
    return log


def _batches(log: pb.GameLog, rng: random.Random) -> list[list[pb.Event]]:
    size = rng.choice([1, 7, 50, 50, 50, 200, 200, 200, 1000])  # one event per message is rare: it is slow
    events = list(log.events)
    return [events[i:i + size] for i in range(0, len(events), size)]


def _metadata(rng: random.Random) -> spb.SubmissionMetadata:
    meta = spb.SubmissionMetadata(tournament="fuzz")
    if rng.random() < 0.3:
        mutate_message(meta, rng)
    return meta


def _known_id(rng: random.Random, known: Sequence[str]) -> str:
    if known and rng.random() < 0.7:
        ident = rng.choice(known)
        return ident[: rng.choice([8, 12, 63, 64])]
    return rng.choice(["", "0" * 64, "f" * 8, "g" * 64, "a" * 63 + "\0", "%", "%%%%%%%%", "________", "deadbeef",
                       "DEADBEEF" * 8, "a" * 65, "a" * 10_000, "0" * 7, " " + "a" * 63, "\u0661" * 64, "\0"])


def page_token(rng: random.Random) -> str:
    r = rng.randrange(8)
    if r == 0:
        return base64.urlsafe_b64encode(rng.randbytes(rng.randint(0, 200))).decode()
    if r == 1:
        return rng.choice(["", "=", "===", "!!!!", "a", "\0", "AAAA" * 250, "AAAA" * 251, "\ud800"[:0] + "é"])
    if r == 2:
        depth = rng.choice([10, 100, 300, 700, 749, 5000])
        return base64.urlsafe_b64encode((rng.choice("[{") * depth).encode()).decode()
    doc: Any = rng.choice([
        {"t": rng.choice(["2020-01-01T00:00:00", "0001-01-01T00:00:00", "9999-12-31T23:59:59", "x", "", 5, None,
                          "2020-13-45T99:99:99", "+275760-09-13T00:00:00", "2020-01-01T00:00:00+99:00"]),
         "id": rng.choice(["a" * 64, "a" * 63 + "\0", 5, None, "", "g" * 64, ["a"], {"x": 1}, "z" * 10_000])},
        json_value(rng), {"t": json_value(rng)}, [], "token", 1e400 if rng.random() < 0.1 else 12,
    ])
    return base64.urlsafe_b64encode(json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")).decode()


def list_request(rng: random.Random, absurd: bool = True) -> spb.ListReplaysRequest:
    req = spb.ListReplaysRequest(page_size=rng.choice([0, 1, 5, 50]))
    if absurd:
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if r < 0.3:
                req.page_token = page_token(rng)
            elif r < 0.5:
                for name in ("submitted_after", "submitted_before"):
                    if rng.random() < 0.6:
                        ts = getattr(req, name)
                        ts.seconds = absurd_int(rng, -2**63, 2**63 - 1)
                        ts.nanos = absurd_int(rng, -2**31, 2**31 - 1) if rng.random() < 0.5 else 0
            elif r < 0.6:
                req.page_size = absurd_int(rng, 0, 2**32 - 1)
            else:
                mutate_message(req, rng)
    else:
        req.tournament = rng.choice(["", "fuzz-nothing-matches", "nothing"])
    return req


def valid_requests(method: str, rng: random.Random, known: Sequence[str]) -> list[Message]:
    """A well-formed request (stream) of ``method``, to mutate."""
    if method == "VerifyLog":
        log = _game(rng)
        r = rng.random()
        if r < 0.5:
            return [spb.VerifyLogRequest(log=log, metadata=_metadata(rng), summary_only=rng.random() < 0.9)]
        if r < 0.8:
            data = log.SerializeToString() if rng.random() < 0.7 else json_format.MessageToJson(log).encode()
            return [spb.VerifyLogRequest(encoded_log=data, metadata=_metadata(rng), summary_only=True)]
        return [spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine=rng.choice(["freekill", "", "nope"]),
                                                                data=absurd_bytes(rng), name="room.jsonl"))]
    if method == "UploadLog":
        log = _game(rng)
        first = spb.UploadLogRequest(header=log.header, metadata=_metadata(rng), summary_only=True)
        return [first, *(spb.UploadLogRequest(events=b) for b in _batches(log, rng))]
    if method == "VerifyLive":
        log = _game(rng)
        opening = spb.VerifyLiveRequest(header=log.header, metadata=_metadata(rng), discard=rng.random() < 0.5)
        return [opening, *(spb.VerifyLiveRequest(events=b) for b in _batches(log, rng))]
    if method == "GetReplay":
        return [spb.GetReplayRequest(id=_known_id(rng, known), include_log=rng.random() < 0.3,
                                     include_original=rng.random() < 0.3,
                                     run=rng.choice(["", "", "", "fuzz-run", "nope"]))]
    if method == "ListReplays":
        return [list_request(rng, absurd=False)]
    if method == "DeleteReplay":
        return [spb.DeleteReplayRequest(id=_known_id(rng, known))]
    if method == "Regress":
        # a filter that matches nothing: a valid Regress that re-verifies the whole store would dominate the run
        return [spb.RegressRequest(filter=spb.ListReplaysRequest(tournament=fuzz_tag(rng)),
                                   run=rng.choice(["", "fuzz-run"]), against=rng.choice(["", "", "fuzz-run"]))]
    if method == "ListRuns":
        return [spb.ListRunsRequest()]
    raise KeyError(method)


def rpc_raw(rng: random.Random, known: Sequence[str]) -> RpcInput:
    """Malformed request bytes: any method, junk, deep nesting, truncated or flipped valid requests."""
    if rng.random() < 0.1:
        method = rng.choice(OTHER_METHODS)
        messages = [junk_bytes(rng) if rng.random() < 0.5 else wire_junk(rng) for _ in range(rng.randint(1, 3))]
        return RpcInput(method, messages, note="junk to health/reflection")
    method = rng.choice(METHODS)
    messages = [m.SerializeToString() for m in valid_requests(method, rng, known)]
    r = rng.random()
    at = rng.randrange(len(messages))
    if r < 0.25:
        messages[at] = junk_bytes(rng)
    elif r < 0.45:
        messages[at] = wire_junk(rng)
    elif r < 0.55:
        messages[at] = deep_message(rng)
    elif r < 0.75:
        messages[at] = messages[at][: rng.randint(0, len(messages[at]))]
    else:
        messages[at] = bitflip(messages[at], rng)
    if method in UNARY | SERVER_STREAM:
        messages = messages[:1]
    return RpcInput(SERVICE + method, messages, note="raw")


def rpc_absurd(rng: random.Random, known: Sequence[str]) -> RpcInput:
    method = rng.choice(METHODS)
    requests = valid_requests(method, rng, known)
    for _ in range(rng.choice([1, 1, 2, 3])):
        mutate_message(requests[rng.randrange(len(requests))] if rng.random() < 0.7 else requests[0], rng)
    if method in UNARY | SERVER_STREAM:
        requests = requests[:1]
    return RpcInput(SERVICE + method, [m.SerializeToString() for m in requests], note="absurd")


def rpc_log(rng: random.Random, known: Sequence[str]) -> RpcInput:
    r = rng.random()
    if r < 0.15:
        req = spb.VerifyLogRequest(log=absurd_log(rng), summary_only=True)
        return RpcInput(SERVICE + "VerifyLog", [req.SerializeToString()], note="absurd log")
    if r < 0.25:
        foreign = spb.ForeignLog(engine="freekill", data=any_offline_input(rng), name=absurd_string(rng)[:300])
        return RpcInput(SERVICE + "VerifyLog", [spb.VerifyLogRequest(foreign_log=foreign).SerializeToString()],
                        note="foreign")
    data = any_offline_input(rng)
    req = spb.VerifyLogRequest(encoded_log=data, summary_only=rng.random() < 0.9,
                               metadata=spb.SubmissionMetadata(tournament="fuzz"))
    return RpcInput(SERVICE + "VerifyLog", [req.SerializeToString()], note="encoded log")


def rpc_query(rng: random.Random, known: Sequence[str]) -> RpcInput:
    method = rng.choice(["ListReplays", "ListReplays", "GetReplay", "DeleteReplay", "Regress"])
    if method == "ListReplays":
        req: Message = list_request(rng)
    elif method == "GetReplay":
        req = spb.GetReplayRequest(id=_known_id(rng, known), run=absurd_string(rng) if rng.random() < 0.3 else "",
                                   include_log=rng.random() < 0.5, include_original=rng.random() < 0.5)
    elif method == "DeleteReplay":
        req = spb.DeleteReplayRequest(id=_known_id(rng, known))
    else:
        flt = list_request(rng)
        flt.tournament = flt.tournament or fuzz_tag(rng)  # never the whole store
        req = spb.RegressRequest(filter=flt, run=absurd_string(rng) if rng.random() < 0.4 else "",
                                 against=absurd_string(rng) if rng.random() < 0.3 else "",
                                 restart=rng.random() < 0.2)
    return RpcInput(SERVICE + method, [req.SerializeToString()], note="query")


def rpc_stream(rng: random.Random, known: Sequence[str]) -> RpcInput:
    method = rng.choice(["UploadLog", "VerifyLive"])
    messages = [m.SerializeToString() for m in valid_requests(method, rng, known)]
    r = rng.randrange(9)
    cancel: int | None = None
    note = "stream"
    if r == 0:
        cancel = rng.randint(0, len(messages))
        note = "cancelled midway"
    elif r == 1:
        messages = messages[1:]
        note = "no header"
    elif r == 2:
        messages.insert(rng.randint(1, len(messages)), messages[0])
        note = "header twice"
    elif r == 3:
        messages.insert(rng.randint(0, len(messages)), junk_bytes(rng) if rng.random() < 0.5 else wire_junk(rng))
        note = "junk midway"
    elif r == 4:
        messages = messages[: rng.randint(0, len(messages))]
        note = "ends early"
    elif r == 5:
        rng.shuffle(messages)
        note = "shuffled"
    elif r == 6:
        at = rng.randrange(len(messages))
        messages[at] = bitflip(messages[at], rng)
        note = "flipped message"
    elif r == 7:
        messages += [messages[-1]] * rng.choice([1, 5, 120])
        note = "batches repeated"
    else:
        cls = spb.UploadLogRequest if method == "UploadLog" else spb.VerifyLiveRequest
        msgs = [cls.FromString(m) for m in messages]
        mutate_message(msgs[rng.randrange(len(msgs))], rng)
        messages = [m.SerializeToString() for m in msgs]
        note = "absurd message"
    return RpcInput(SERVICE + method, messages, cancel, note)


RPC_GENERATORS: dict[str, Callable[[random.Random, Sequence[str]], RpcInput]] = {
    "rpc-raw": rpc_raw, "rpc-absurd": rpc_absurd, "rpc-log": rpc_log, "rpc-query": rpc_query,
    "rpc-stream": rpc_stream}
RPC_FAMILIES = tuple(RPC_GENERATORS)
FAMILIES = (*OFFLINE_FAMILIES, *RPC_FAMILIES)


def _identity(b: bytes) -> bytes:
    return b


def call_raw(channel: grpc.Channel, case: RpcInput, timeout: float = RPC_SECONDS
             ) -> tuple[grpc.StatusCode, str, list[bytes], float]:
    """Send ``case`` as it is (bytes, no client-side checks); the status, its details, the response
    messages and the seconds it took."""
    name = case.method.rsplit("/", 1)[1]
    started = time.monotonic()
    responses: list[bytes] = []
    try:
        if (case.method.startswith(SERVICE) and name in UNARY) or case.method.endswith("/Check"):
            fn = channel.unary_unary(case.method, request_serializer=_identity, response_deserializer=_identity)
            responses.append(fn(case.messages[0] if case.messages else b"", timeout=timeout))
        elif name in SERVER_STREAM:
            fn2 = channel.unary_stream(case.method, request_serializer=_identity, response_deserializer=_identity)
            responses.extend(fn2(case.messages[0] if case.messages else b"", timeout=timeout))
        elif name in CLIENT_STREAM:
            fn3 = channel.stream_unary(case.method, request_serializer=_identity, response_deserializer=_identity)
            if case.cancel_after is None:
                responses.append(fn3(iter(case.messages), timeout=timeout))
            else:
                cut = _Cut(case.messages, case.cancel_after)
                fut = fn3.future(iter(cut), timeout=timeout)
                # cancel once the messages are on their way (the server may hold some), or the call has ended
                deadline = time.monotonic() + timeout
                while not cut.sent.wait(0.02) and not fut.done() and time.monotonic() < deadline:
                    pass
                time.sleep(0.01)
                fut.cancel()
                cut.cancelled.set()
                with contextlib.suppress(grpc.FutureCancelledError):
                    responses.append(fut.result())
                if fut.cancelled():
                    return grpc.StatusCode.CANCELLED, "cancelled by the fuzzer", responses, time.monotonic() - started
        else:
            fn4 = channel.stream_stream(case.method, request_serializer=_identity, response_deserializer=_identity)
            if case.cancel_after is None:
                responses.extend(fn4(iter(case.messages), timeout=timeout))
            else:
                cut = _Cut(case.messages, case.cancel_after)
                call = fn4(iter(cut), timeout=timeout)
                try:
                    if case.cancel_after:
                        for i, res in enumerate(call):  # one answer per message sent
                            responses.append(res)
                            if i + 1 >= case.cancel_after:
                                break
                    call.cancel()
                finally:
                    cut.cancelled.set()
                return grpc.StatusCode.CANCELLED, "cancelled by the fuzzer", responses, time.monotonic() - started
    except grpc.RpcError as err:
        return err.code(), err.details() or "", responses, time.monotonic() - started
    return grpc.StatusCode.OK, "", responses, time.monotonic() - started


class _Cut:
    """A request stream of the first ``after`` messages that does not half-close until a second after the
    client has cancelled the call (``cancelled`` set): so the server cannot take it for a whole stream, however
    slow (a half-close right after the cancel can reach the server first)."""

    def __init__(self, messages: list[bytes], after: int) -> None:
        self.messages = messages[:after]
        self.sent = threading.Event()
        self.cancelled = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield from self.messages
        self.sent.set()
        if self.cancelled.wait(RPC_SECONDS):
            time.sleep(1.0)


# ============================================================================ the server under test

def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError), open(task / "children") as f:
                found += [int(p) for p in f.read().split()]
    return found


@dataclass(slots=True)
class Memory:
    """The server's resident memory in KiB: its own process, and with its worker processes."""

    start: int = 0
    peak: int = 0
    end: int = 0
    start_total: int = 0
    peak_total: int = 0
    end_total: int = 0

    def sample(self, pid: int, first: bool = False) -> None:
        own = rss_kib(pid)
        total = own + sum(rss_kib(c) for c in children(pid))
        if first or not self.start:
            self.start, self.start_total = own, total
        self.peak, self.peak_total = max(self.peak, own), max(self.peak_total, total)
        self.end, self.end_total = own, total

    def text(self) -> str:
        mib = 1024
        return (f"{self.start // mib}/{self.peak // mib}/{self.end // mib} MiB "
                f"(with workers {self.start_total // mib}/{self.peak_total // mib}/{self.end_total // mib})")


class ServerUnderTest:
    """``sgs-verify serve`` in a subprocess on a fresh database of the given backend, with small limits so
    that they are reached cheaply, one channel to it, and what the fuzzer knows of its store."""

    def __init__(self, backend: str, folder: Path, workers: int = 1) -> None:
        self.backend = backend
        self.folder = folder
        self.workers = workers
        self.db: Any = None
        self.proc: subprocess.Popen[str] | None = None
        self.channel: grpc.Channel | None = None
        self.address = ""
        self.memory = Memory()
        self.known: list[str] = []  # ids of replays stored by the fuzzer and not deleted
        self.output: list[str] = []
        self.restarts = 0
        self.metrics_url = ""  # the server's Prometheus metrics: which client streams it still serves

    def database_url(self) -> str:
        if self.backend == "sqlite":
            return f"sqlite:///{self.folder / 'replays.sqlite3'}"
        if self.db is None:
            from tests.service.conftest import PgDatabase

            self.db = PgDatabase()
        url: str = self.db.url()
        return url

    def start(self) -> ServerUnderTest:
        url = self.database_url()
        cmd = [sys.executable, "-m", "clients.cli", "serve", "--address", "127.0.0.1:0", "--workers",
               str(self.workers), "--data-dir", str(self.folder), "--db", url, "--migrate", "--rate-limit", "0",
               "--deadline", str(SERVER_DEADLINE), "--max-message-bytes", str(8 << 20), "--max-stream-messages",
               "100", "--max-buffered-bytes", str(64 << 20), "--grace", "2", "--metrics", "127.0.0.1:0"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                     env=env, start_new_session=True)
        assert self.proc.stdout is not None
        address = ""
        for line in self.proc.stdout:
            self.output.append(line)
            m = re.search(r"listening on (\S+)", line)
            if m:
                address = m.group(1)
            m = re.search(r"Prometheus metrics on (\S+)", line)
            if m:
                self.metrics_url = m.group(1)
                break  # (printed after the limits)
        if not address:
            raise RuntimeError("the server did not start:\n" + "".join(self.output[-30:]))
        self.address = address
        threading.Thread(target=self._drain, daemon=True).start()
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
        self.channel = grpc.insecure_channel(address, options=options)
        grpc.channel_ready_future(self.channel).result(timeout=60)
        self.memory.sample(self.proc.pid, first=not self.memory.start)
        return self

    def _drain(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)
            del self.output[:-200]

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def restart(self) -> None:
        self.restarts += 1
        self.stop(drop=False)
        self.start()

    def stop(self, drop: bool = True) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=30)
            self.proc = None
        if drop and self.db is not None:
            self.db.drop()
            self.db = None

    def sample_memory(self) -> None:
        if self.proc is not None and self.alive:
            self.memory.sample(self.proc.pid)

    # ------------------------------------------------------------------ running a case and the oracles

    def run(self, case: RpcInput) -> Outcome:
        assert self.channel is not None and self.proc is not None
        before = self.count() if _stores(case) else None
        code, details, responses, seconds = call_raw(self.channel, case)
        if not self.alive:
            return Outcome("crash", f"the server died (exit {self.proc.returncode}) on {case.method}: "
                           + "".join(self.output[-20:])[-3000:])
        name = case.method.rsplit("/", 1)[1]
        if code == grpc.StatusCode.DEADLINE_EXCEEDED and seconds >= RPC_SECONDS - 1:
            return Outcome("hang", f"{name}: no answer within {RPC_SECONDS:.0f} s")
        if code == grpc.StatusCode.UNKNOWN:
            return Outcome("unknown", f"{name}: UNKNOWN: {details[:2000]}")
        if code == grpc.StatusCode.INTERNAL:
            return Outcome("internal", f"{name}: INTERNAL: {details[:2000]}")
        if code == grpc.StatusCode.CANCELLED and case.cancel_after is not None:
            pass
        elif code not in CLEAN_CODES:
            return Outcome("unexpected", f"{name}: {code.name}: {details[:2000]}")
        if code != grpc.StatusCode.OK:
            problem = _bad_details(details)
            if problem:
                return Outcome("unexpected", f"{name}: {code.name} with {problem}: {details[:2000]}")
        stored = self._note_answer(name, code, responses)
        if before is not None and code != grpc.StatusCode.OK and not stored:
            if code == grpc.StatusCode.CANCELLED and case.cancel_after is not None:
                self._wait_for_streams_to_end()
            after = self.count()
            if after != before and code == grpc.StatusCode.CANCELLED and case.cancel_after is not None:
                after = self._count_once_undone(before)
            if after != before:
                return Outcome("unexpected", f"{name} answered {code.name} but the store went from {before} to "
                               f"{after} replays (half-written?)")
        return Outcome("ok" if code == grpc.StatusCode.OK else f"error:{code.name}", details[:200])

    def _note_answer(self, name: str, code: grpc.StatusCode, responses: list[bytes]) -> bool:
        """Keep the ids of stored replays (to fetch and delete them later); True if the call stored one."""
        if code != grpc.StatusCode.OK and name != "VerifyLive":
            return False
        ids: list[str] = []
        if name in ("VerifyLog", "UploadLog") and responses:
            res = spb.VerifyLogResponse.FromString(responses[0])
            ids.append(res.info.id)
        elif name == "VerifyLive":
            for raw in responses:
                live = spb.VerifyLiveResponse.FromString(raw)
                if live.HasField("finished") and live.finished.stored:
                    ids.append(live.finished.info.id)
        elif name == "DeleteReplay" and responses:
            gone = spb.DeleteReplayResponse.FromString(responses[0]).id
            self.known = [k for k in self.known if k != gone]
        for ident in ids:
            if ident and ident not in self.known:
                self.known.append(ident)
        return bool(ids)

    def _wait_for_streams_to_end(self, seconds: float = 10.0) -> None:
        """Until the server serves no client stream (its metrics say): the client's cancel returns at once,
        and the server may only then store the game it took for whole and delete it again (docs/service.md,
        "A cancelled stream") — a count taken before that would see a replay come and go in a later case."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.streams_open() > 0:
            time.sleep(0.02)

    def streams_open(self) -> int:
        """The client streams the server is serving, from its metrics (0 without them)."""
        if not self.metrics_url:
            return 0
        import urllib.request

        with urllib.request.urlopen(self.metrics_url, timeout=10) as page:
            text = page.read().decode()
        return sum(round(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                   if line.startswith("sgs_verify_streams_open{"))

    def _count_once_undone(self, before: int, seconds: float = 10.0) -> int:
        """The count once the server is done with a call the fuzzer cancelled: the client's cancel returns at
        once, while the server may be storing the game as it learns of the cancel — it then deletes it again
        before the call ends (docs/service.md, "A cancelled stream"). Only that: a replay still there after
        ``seconds`` is a finding."""
        deadline = time.monotonic() + seconds
        after = self.count()
        while after != before and time.monotonic() < deadline:
            time.sleep(0.05)
            after = self.count()
        return after

    def count(self) -> int:
        assert self.channel is not None
        fn = self.channel.unary_unary(SERVICE + "ListReplays",
                                      request_serializer=spb.ListReplaysRequest.SerializeToString,
                                      response_deserializer=spb.ListReplaysResponse.FromString)
        return int(fn(spb.ListReplaysRequest(page_size=1), timeout=60).total_count)

    def check_store(self, keep: int = 20) -> list[str]:
        """Every stored replay is whole: it can be read back with its log, the log's hash is its id's,
        and its annotations are all there. Then all but ``keep`` of the fuzzer's replays are deleted (and
        must be gone). Returns the problems found."""
        assert self.channel is not None
        problems: list[str] = []
        get = self.channel.unary_unary(SERVICE + "GetReplay", request_serializer=spb.GetReplayRequest.SerializeToString,
                                       response_deserializer=spb.GetReplayResponse.FromString)
        delete = self.channel.unary_unary(SERVICE + "DeleteReplay",
                                          request_serializer=spb.DeleteReplayRequest.SerializeToString,
                                          response_deserializer=spb.DeleteReplayResponse.FromString)
        listing = self.channel.unary_unary(SERVICE + "ListReplays",
                                           request_serializer=spb.ListReplaysRequest.SerializeToString,
                                           response_deserializer=spb.ListReplaysResponse.FromString)
        ids: list[str] = []
        token = ""
        while True:
            page = listing(spb.ListReplaysRequest(page_size=1000, page_token=token), timeout=120)
            ids += [r.id for r in page.replays]
            token = page.next_page_token
            if not token:
                break
        import hashlib

        for ident in ids:
            try:
                got = get(spb.GetReplayRequest(id=ident, include_log=True), timeout=120)
            except grpc.RpcError as err:
                problems.append(f"stored replay {ident[:12]} cannot be read: {err.code().name}: {err.details()}")
                continue
            digest = hashlib.sha256(got.log.SerializeToString(deterministic=True)).hexdigest()
            if got.info.log_sha256 != digest:
                problems.append(f"stored replay {ident[:12]}: its log's hash is {digest[:12]}, not "
                                f"{got.info.log_sha256[:12]}")
            if len(got.log.events) != got.info.event_count:
                problems.append(f"stored replay {ident[:12]}: {len(got.log.events)} events, info says "
                                f"{got.info.event_count}")
            if got.replay.violation_count != got.info.violation_count:
                problems.append(f"stored replay {ident[:12]}: violation counts differ")
        mine = [k for k in self.known if k in set(ids)]
        for ident in mine[: max(0, len(mine) - keep)]:
            delete(spb.DeleteReplayRequest(id=ident), timeout=120)
            try:
                get(spb.GetReplayRequest(id=ident), timeout=120)
                problems.append(f"replay {ident[:12]} is still there after DeleteReplay")
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.NOT_FOUND:
                    problems.append(f"a deleted replay's GetReplay: {err.code().name}")
        gone = set(mine[: max(0, len(mine) - keep)])
        self.known = [k for k in self.known if k not in gone and k in set(ids)]
        return problems


def _stores(case: RpcInput) -> bool:
    return case.method.rsplit("/", 1)[1] in ("VerifyLog", "UploadLog", "VerifyLive")


def _bad_details(details: str) -> str:
    """What an error's message must not have: the SQL, a traceback, driver names; or be empty/unbounded."""
    for word in ("SELECT ", "INSERT ", "[SQL", "sqlalchemy", "psycopg", "Traceback", "File \""):
        if word in details:
            return f"{word.strip()!r} in it"
    if len(details) > 4000:
        return f"a message of {len(details)} characters"
    return ""


# ============================================================================ tallies

@dataclass(slots=True)
class Tally:
    cases: int = 0
    crashes: int = 0
    hangs: int = 0
    unknown: int = 0
    internal: int = 0
    unexpected: int = 0
    seconds: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.cases += 1
        self.outcomes[outcome.label] = self.outcomes.get(outcome.label, 0) + 1
        if outcome.label == "crash":
            self.crashes += 1
        elif outcome.label == "hang":
            self.hangs += 1
        elif outcome.label == "unknown":
            self.unknown += 1
        elif outcome.label == "internal":
            self.internal += 1
        elif outcome.label == "unexpected":
            self.unexpected += 1

    @property
    def findings(self) -> int:
        return self.crashes + self.hangs + self.unknown + self.internal + self.unexpected


def case_rng(family: str, seed: int, index: int) -> random.Random:
    return random.Random(f"{seed}:{family}:{index}")


def write_finding(folder: Path, family: str, backend: str, seed: int, index: int, outcome: Outcome,
                  data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{family}-{backend}-s{seed}-i{index}-{outcome.label}"
    stem.with_suffix(".bin").write_bytes(data)
    stem.with_suffix(".txt").write_text(
        f"family {family}, backend {backend}, seed {seed}, case {index}: {outcome.label}\n{outcome.detail}\n"
        f"reproduce: python tools/fuzz.py --family {family} --backend {backend} --seed {seed} --start {index} "
        "--cases 1\n", encoding="utf-8")
    return stem
