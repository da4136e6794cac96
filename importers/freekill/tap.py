"""The FreeKill tap's log lines (docs/freekill-bridge.md) -> each room's messages, as the converter reads them.

The tap (integrations/freekill/tap/, a FreeKill server package) writes one record per line into the server's
log: ``SGSV1 `` and a JSON object (``v``, ``room``, ``seq``, ``kind`` and the kind's fields; payloads as base64
of the CBOR the server sends). Lines of every room are interleaved in one log; this module finds the records
(``parse_log_line``: the marker counts only right after the line's prefix, where the tap puts it), keeps each
room's apart and in order (``RoomTap``: a lost line is a gap, and a room with a gap cannot be verified), and
turns them into ``Message`` s — the same shape a server transcript is read into, each reply carrying who made
it (``by``: client, ai or none).

``tap_lines`` goes the other way, from a shared-format transcript to the lines a tap would have written for
that game (tests and the benchmark replay recorded games through it).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from importers.freekill import cbor
from importers.freekill.messages import BY_AI, BY_CLIENT, BY_NONE, NOTIFY, REPLY, REQUEST, Message

MARKER: Final = "SGSV1 "
VERSION: Final = 1
KINDS: Final = frozenset({"meta", "notify", "request", "reply", "check", "end"})
# (a "check" record is the tap's verdict on a reply, made inside the server: integrations/freekill/tap/README.md;
# it takes its place in the room's sequence and is no message of the game)
# A record is one log line, bounded, so that a garbled line (a missing newline joining many) is refused, not
# parsed, and a reader holds no more than this of it: the largest record of the shared games is 3.5 kB.
MAX_RECORD_BYTES: Final = 4 << 20
# FreeKill's room and player ids are C++ ints; the tap's seq counts a room's records from 1. A room id names
# the bridge's files (rooms/<room>.<game>.tap): one from 0 keeps the name to digits.
INT_MIN: Final = -(1 << 31)
INT_MAX: Final = (1 << 31) - 1
# The longest integer a record's JSON may hold (a C++ int64 has 19 digits): longer ones are refused before
# Python converts them (its conversion refuses 4,300 digits with a ValueError, and is slow well before).
_MAX_DIGITS: Final = 20
# What a reply's status says when nobody answered (the default was taken).
_NO_ANSWER: Final = frozenset({"timeout"})
# spdlog's time stamp at the start of a freekill.log line: "YY-MM-DD HH:MM:SS.mmm" (maybe in brackets).
_STAMP: Final = re.compile(r"\[?(\d{2,4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")
# A tap line of freekill.log exactly as FreeKill's server (asio) writes it: its file sink's pattern is
# "%C-%m-%d %H:%M:%S.%e %t[%L] %v", where %t is the thread's name as 16 bytes (the name, then NULs; the test
# host and replaylog write a number there) and %L the level, I for fk.qInfo; %v is the message, which the tap
# starts with the marker. The marker is taken there only: a message that quotes it elsewhere (a chat line, a
# player's name, a Lua error repeating a record) is not a record. (A thread name cannot hold "[", so the "[I] "
# matched is the line's own level, not one in the message.)
_TAP_LINE: Final = re.compile(r"(\d{2})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3}) "
                              r"[^\x00\[\n]{1,15}\x00{0,15}\[I\] " + re.escape(MARKER))

# Why a line is unreadable (TapError.reason; the bridge's sgs_verify_bridge_unreadable_lines_total{reason}).
TOO_LONG: Final = "too_long"
NOT_JSON: Final = "not_json"
BIG_INTEGER: Final = "big_integer"
NOT_A_RECORD: Final = "not_a_record"
OUT_OF_RANGE: Final = "out_of_range"
REASONS: Final = (TOO_LONG, NOT_JSON, BIG_INTEGER, NOT_A_RECORD, OUT_OF_RANGE)


class TapError(ValueError):
    """A tap record that cannot be read (what is wrong with it; ``reason``: which of REASONS)."""

    def __init__(self, message: str, reason: str = NOT_A_RECORD) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TapRecord:
    room: int
    seq: int
    kind: str
    body: Mapping[str, Any]  # the record's JSON object
    written: float | None = None  # the log line's time stamp (epoch seconds, local time), when it has one


def _stamp_time(groups: Sequence[str | None]) -> float | None:
    year, month, day, hour, minute, second = (int(g or 0) for g in groups[:6])
    if year < 100:
        year += 2000
    frac = groups[6] or "0"
    try:
        base = time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    except (OverflowError, ValueError):
        return None
    fraction: float = int(frac) / 10 ** len(frac)
    return float(base) + fraction


def line_time(line: str) -> float | None:
    """The time stamp spdlog wrote at the start of a log line (local time), as epoch seconds."""
    m = _STAMP.match(line)
    return None if m is None else _stamp_time(m.groups())


def _short(value: Any) -> str:
    """A value for a message: a record's field can be as long as the record."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _BigInteger(Exception):
    pass


def _json_int(digits: str) -> int:
    if len(digits) > _MAX_DIGITS:
        raise _BigInteger(len(digits))
    return int(digits)


def _bounded(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def tap_text(line: str) -> str | None:
    """The record text of a freekill.log line the tap wrote (what follows the marker), None for any other line:
    the marker counts only right after the line's prefix (_TAP_LINE)."""
    m = _TAP_LINE.match(line)
    return None if m is None else line[m.end():]


def parse_log_line(line: str) -> TapRecord | None:
    """The tap record a line of FreeKill's log holds (None: not a tap line, the marker not where the tap writes
    it); TapError (with its reason) if the record is malformed."""
    m = _TAP_LINE.match(line)
    if m is None:
        return None
    return parse_record(line[m.end():], _stamp_time(m.groups()))


def parse_line(line: str) -> TapRecord | None:
    """The tap record in a line of the tap's text wherever the marker is in it (None: no marker): for the
    tap's own output and tests' lines. A server's log, where other text can quote the marker, is read with
    parse_log_line."""
    at = line.find(MARKER)
    if at < 0:
        return None
    return parse_record(line[at + len(MARKER):], line_time(line))


def parse_record(text: str, written: float | None = None) -> TapRecord:
    """A record's JSON text (what follows the marker), checked: TapError (with its reason) if it is not a
    record of this format, or its ids are out of range."""
    text = text.rstrip("\r\n")
    if len(text) > MAX_RECORD_BYTES:
        raise TapError(f"a tap record of {len(text)} characters (over {MAX_RECORD_BYTES})", TOO_LONG)
    try:
        obj = json.loads(text, parse_int=_json_int)
    except _BigInteger as err:
        raise TapError(f"a tap record with an integer of {err.args[0]} digits", BIG_INTEGER) from None
    except (ValueError, RecursionError) as err:  # (json.JSONDecodeError is a ValueError)
        raise TapError(f"a tap record that is not JSON ({err})", NOT_JSON) from None
    if not isinstance(obj, dict):
        raise TapError("a tap record is a JSON object")
    if obj.get("v") != VERSION:
        raise TapError(f"tap record format {_short(obj.get('v'))}; this reader knows format {VERSION}")
    room, seq, kind = obj.get("room"), obj.get("seq"), obj.get("kind")
    if not isinstance(room, int) or not isinstance(seq, int) or isinstance(room, bool) or isinstance(seq, bool):
        raise TapError(f"a tap record needs an integer 'room' and a 'seq' from 1: {_short(room)}, {_short(seq)}")
    if not _bounded(room, 0, INT_MAX) or not _bounded(seq, 1, INT_MAX):
        raise TapError(f"a tap record's 'room' is from 0 and its 'seq' from 1, each to {INT_MAX}: {room}, {seq}",
                       OUT_OF_RANGE)
    if kind not in KINDS:
        raise TapError(f"room {room} seq {seq}: unknown record kind {_short(kind)}")
    ids = obj.get("ids")
    if ids is not None and not (isinstance(ids, list) and all(_bounded(i, INT_MIN, INT_MAX) for i in ids)):
        raise TapError(f"room {room} seq {seq}: 'ids' must be player ids (C++ ints)", OUT_OF_RANGE)
    return TapRecord(room, seq, kind, obj, written)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_payload(b64: Any, where: str) -> Any:
    """A base64 CBOR payload as the transcripts have it: maps keyed by strings, tags (FreeKill's 33001-33005
    class markers) unwrapped, byte strings as text, undefined as null."""
    if not isinstance(b64, str):
        raise TapError(f"{where}: the payload must be base64 text, not {type(b64).__name__}")
    try:
        raw = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError) as err:
        raise TapError(f"{where}: the payload is not base64 ({err})") from None
    try:
        value = cbor.decode(raw, str_keys=True, skip_tags=True)
    except cbor.CborError as err:
        raise TapError(f"{where}: the payload is not CBOR ({err})") from None
    try:
        return cbor.json_shaped(value)
    except cbor.CborError as err:
        raise TapError(f"{where}: the payload {err}") from None


def _to(value: Any, where: str) -> tuple[int, ...]:
    if _bounded(value, INT_MIN, INT_MAX):
        return (value,)
    if isinstance(value, list) and all(_bounded(v, INT_MIN, INT_MAX) for v in value):
        return tuple(value)
    raise TapError(f"{where}: 'to' must be player ids (C++ ints)", OUT_OF_RANGE)


# A check record's verdicts (integrations/freekill/tap/README.md, "Reply check").
CHECK_OK: Final = "ok"
CHECK_REFUSED: Final = "refused"
CHECK_UNJUDGED: Final = "unjudged"
CHECK_VERDICTS: Final = (CHECK_OK, CHECK_REFUSED, CHECK_UNJUDGED)
# The longest text of a check's code and why kept (a record's field can be as long as the record).
_MAX_CHECK_TEXT: Final = 500


@dataclass(frozen=True, slots=True)
class ServerCheck:
    """The tap's verdict on one reply, judged inside the server by FreeKill's own rules: the request's handler
    rebuilt and the reply replayed as clicks (``verdict``: ok, refused with a ``code``, or unjudged; ``why`` in
    words). ``reply``: the seq of the reply record judged; ``seq``: the check record's own."""

    seq: int
    reply: int
    player: int
    request: str
    by: str
    verdict: str
    code: str = ""
    why: str = ""
    lua_us: int = 0

    @property
    def refused(self) -> bool:
        return self.verdict == CHECK_REFUSED


def _check_of(seq: int, body: Mapping[str, Any], where: str) -> ServerCheck:
    reply, to, verdict = body.get("reply"), body.get("to"), body.get("verdict")
    if not _bounded(reply, 1, seq - 1):
        raise TapError(f"{where}: a check names the seq of the reply it judges, before its own ('reply')",
                       OUT_OF_RANGE)
    if not _bounded(to, INT_MIN, INT_MAX):
        raise TapError(f"{where}: a check's 'to' must be a player id (a C++ int)", OUT_OF_RANGE)
    if verdict not in CHECK_VERDICTS:
        raise TapError(f"{where}: a check's verdict is one of {', '.join(CHECK_VERDICTS)}, not {_short(verdict)}")
    by = body.get("by", BY_CLIENT)
    if by not in (BY_CLIENT, BY_AI, BY_NONE):
        raise TapError(f"{where}: a check's 'by' is client, ai or none, not {_short(by)}")
    texts = [body.get(k, "") for k in ("cmd", "code", "why")]
    if not all(isinstance(t, str) for t in texts):
        raise TapError(f"{where}: a check's cmd, code and why are text")
    cmd, code, why = (t[:_MAX_CHECK_TEXT] for t in texts)
    if verdict == CHECK_REFUSED and not code:
        raise TapError(f"{where}: a refused check needs its 'code'")
    lua_us = body.get("lua_us", 0)
    return ServerCheck(seq, body["reply"], body["to"], cmd, by, verdict, code, why,
                       lua_us if _bounded(lua_us, 0, INT_MAX) else 0)


class TapGap(TapError):
    """A room's records are not contiguous: lines were lost, the room cannot be verified."""


@dataclass(slots=True)
class RoomTap:
    """One room's records, in order: its meta, and the messages made from the others so far."""

    room: int
    meta: dict[str, Any] | None = None  # players, settings (decoded), ids, mode, core, tap
    messages: list[Message] = field(default_factory=list)
    next_seq: int = 1
    result: str | None = None  # set by the 'end' record: the winners ("" for a draw)
    keep: bool = True  # keep the messages in ``messages`` (a reader that hands each on as it comes keeps none)
    # What is known of the room whatever the conversion makes of it (a room our engine does not replay is still
    # reported and stored with these): the tap's checks, the replies by who made them, the seating, generals
    # and roles as FreeKill announced them.
    checks: list[ServerCheck] = field(default_factory=list)
    replies: dict[int, str] = field(default_factory=dict)  # reply seq -> by (client, ai, none)
    seats: list[int] = field(default_factory=list)  # FreeKill player ids in seat order (ArrangeSeats)
    generals: dict[int, str] = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.result is not None

    def add(self, rec: TapRecord) -> Message | None:
        """Take the room's next record; returns the message it is (None for meta and end). TapGap when
        it is not the next one in sequence (a duplicate of one already taken is ignored: None)."""
        if rec.room != self.room:
            raise ValueError(f"record of room {rec.room} given to room {self.room}")
        if rec.seq < self.next_seq:
            return None  # a line read twice (the follower re-read it after a restart): already taken
        if rec.seq > self.next_seq:
            raise TapGap(f"room {self.room}: record {self.next_seq} is missing (the next one is {rec.seq}): "
                         "lines were lost")
        where = f"room {self.room} seq {rec.seq}"
        if self.meta is None and rec.kind != "meta":
            raise TapError(f"{where}: the room's first record is {rec.kind!r}, not its meta")
        if self.ended:
            raise TapError(f"{where}: a {rec.kind!r} record after the room's end")
        self.next_seq += 1
        msg = self._message(rec, where)
        if msg is not None and self.keep:
            self.messages.append(msg)
        return msg

    def _message(self, rec: TapRecord, where: str) -> Message | None:
        body = rec.body
        if rec.kind == "meta":
            if self.meta is not None:
                raise TapError(f"{where}: a second meta record")
            players = body.get("players")
            if not isinstance(players, int) or isinstance(players, bool) or not 2 <= players <= 16:
                raise TapError(f"{where}: the meta record needs the number of 'players'")
            settings = decode_payload(body["settings_cbor"], where) if "settings_cbor" in body else {}
            if not isinstance(settings, dict):
                raise TapError(f"{where}: the room settings are not a map")
            mode = body.get("mode", settings.get("gameMode"))
            if isinstance(mode, str):
                settings.setdefault("gameMode", mode)
            self.meta = {"players": players, "settings": settings, "mode": mode, "ids": body.get("ids"),
                         "core": body.get("core"), "tap": body.get("tap")}
            return None
        if rec.kind == "end":
            result = body.get("result", "")
            self.result = result if isinstance(result, str) else ""
            return None
        if rec.kind == "check":
            self.checks.append(_check_of(rec.seq, body, where))
            return None
        cmd = body.get("cmd")
        if not isinstance(cmd, str):
            raise TapError(f"{where}: a {rec.kind} record needs a 'cmd'")
        to = _to(body.get("to"), where)
        if rec.kind == "notify":
            msg = Message(rec.seq, NOTIFY, cmd, decode_payload(body.get("cbor", ""), where), to)
            self._learn(msg)
            return msg
        if len(to) != 1:
            raise TapError(f"{where}: a {rec.kind} goes to one player, not {list(to)}")
        if rec.kind == "request":
            return Message(rec.seq, REQUEST, cmd, decode_payload(body.get("cbor", ""), where), to)
        # A reply: its final result, "__cancel" (as the transcripts write it) when declined or defaulted.
        data = "__cancel" if body.get("cancel") or "cbor" not in body else decode_payload(body["cbor"], where)
        by = body.get("by")
        if by not in (BY_CLIENT, BY_AI, BY_NONE):
            raise TapError(f"{where}: a reply's 'by' is client, ai or none, not {by!r}")
        if body.get("status") in _NO_ANSWER:
            by = BY_NONE  # the default taken on a timeout, whoever controlled the seat
        self.replies[rec.seq] = by
        return Message(rec.seq, REPLY, cmd, data, to, by)

    def _learn(self, msg: Message) -> None:
        """The seating, generals and roles a notification announces (to every seat: each player gets one copy;
        the first is taken)."""
        data = msg.data
        if msg.cmd == "ArrangeSeats" and isinstance(data, list) and all(_bounded(v, INT_MIN, INT_MAX) for v in data):
            self.seats = list(data)
        elif msg.cmd == "PropertyUpdate" and isinstance(data, list) and len(data) == 3 \
                and _bounded(data[0], INT_MIN, INT_MAX) and isinstance(data[2], str) and data[2]:
            if data[1] == "general":
                self.generals[data[0]] = data[2][:200]
            elif data[1] == "role":
                self.roles[data[0]] = data[2][:200]


def read_tap(lines: Iterable[str]) -> dict[int, RoomTap]:
    """Every room of a whole tap log (lines in the order written), each room's records checked for gaps."""
    rooms: dict[int, RoomTap] = {}
    for line in lines:
        rec = parse_line(line)
        if rec is not None:
            rooms.setdefault(rec.room, RoomTap(rec.room)).add(rec)
    return rooms


# ------------------------------------------------------------------ transcript -> tap lines (tests, benchmark)

_DECIMAL: Final = re.compile(r"0|[1-9][0-9]{0,17}")


def _lua(value: Any) -> Any:
    """A transcript payload as the server's Lua tables were: maps keyed by integers where JSON wrote them as
    decimal strings (so CBOR-encoding it gives what the server sent)."""
    if isinstance(value, Mapping):
        items = {k: _lua(v) for k, v in value.items()}
        if items and all(isinstance(k, str) and _DECIMAL.fullmatch(k) for k in items):
            return {int(k): v for k, v in items.items()}
        return items
    if isinstance(value, list):
        return [_lua(v) for v in value]
    return value


def _b64(value: Any) -> str:
    return base64.b64encode(cbor.encode(_lua(value))).decode("ascii")


def stamp(at: float) -> str:
    """A freekill.log line's prefix for the time ``at`` (epoch seconds, local time), as spdlog writes it."""
    whole = int(at)
    return time.strftime("%y-%m-%d %H:%M:%S", time.localtime(whole)) + f".{int((at - whole) * 1000):03d}"


def tap_records(transcript: Iterable[Mapping[str, Any]], room: int, *, core: str = "",
                tap: str = "test") -> Iterator[dict[str, Any]]:
    """The records the tap would have written for a shared-format transcript (JSON objects): ``ai_reply``
    lines become replies made by the AI; ``log`` and ``gameover`` lines are not records."""
    seq = 0
    meta: Mapping[str, Any] | None = None
    result: str | None = None
    ids: set[int] = set()
    body: list[dict[str, Any]] = []
    for line in transcript:
        kind = line.get("kind")
        if kind == "meta":
            if meta is None:
                meta = line
            continue
        if kind == "notify":
            body.append({"kind": "notify", "to": list(_to(line.get("to", []), "transcript")), "cmd": line["cmd"],
                         "cbor": _b64(line.get("data"))})
            ids.update(_to(line.get("to", []), "transcript"))
            if line["cmd"] == "GameOver":
                result = str(line.get("data") or "")
        elif kind == "request":
            body.append({"kind": "request", "to": line["to"], "cmd": line["cmd"], "cbor": _b64(line.get("data")),
                         "timeout": line.get("timeout", 15)})
        elif kind == "ai_reply":
            data = line.get("data")
            rec: dict[str, Any] = {"kind": "reply", "to": line["to"], "cmd": line["cmd"], "by": BY_AI}
            if data == "__cancel" or data in ("", None):
                rec.update(cancel=True, status="cancel")
            else:
                rec.update(cbor=_b64(data), status="reply")
            body.append(rec)
    if meta is None:
        raise ValueError("the transcript has no meta line")
    settings = dict(meta.get("settings") or {})
    seq += 1
    yield {"v": VERSION, "room": room, "seq": seq, "kind": "meta", "players": meta["players"],
           "mode": settings.get("gameMode", ""), "settings_cbor": _b64(settings), "ids": sorted(ids),
           "core": core, "tap": tap}
    for rec in body:
        seq += 1
        yield {"v": VERSION, "room": room, "seq": seq, **rec}
    if result is not None:
        yield {"v": VERSION, "room": room, "seq": seq + 1, "kind": "end", "result": result}


def tap_line(record: Mapping[str, Any], at: float, thread: int = 1) -> str:
    """A freekill.log line holding a record (with its newline)."""
    return f"{stamp(at)} {thread}[I] {MARKER}{json.dumps(record, ensure_ascii=False, separators=(',', ':'))}\n"


def tap_lines(transcript: Iterable[Mapping[str, Any]], room: int, at: float = 0.0) -> list[str]:
    """The log lines a tap would have written for a transcript (all stamped ``at``)."""
    return [tap_line(rec, at) for rec in tap_records(transcript, room)]


__all__ = ["CHECK_OK", "CHECK_REFUSED", "CHECK_UNJUDGED", "MARKER", "MAX_RECORD_BYTES", "REASONS", "RoomTap",
           "ServerCheck", "TapError", "TapGap", "TapRecord", "decode_payload",
           "line_time", "parse_line", "parse_log_line", "parse_record", "read_tap", "stamp", "tap_line", "tap_lines",
           "tap_records", "tap_text"]
