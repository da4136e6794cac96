"""One FreeKill room's tap lines imported whole: the bridge's spool of a room (or that room's lines cut from
freekill.log), as ``sgs-verify bridge`` uploads a room at its end and anyone can upload one by hand.

The tap's lines hold more than the game: FreeKill's own verdict on each client reply (its ``check`` records,
made inside the server by FreeKill's rules), who made each reply, the seating, generals and roles. So a room is
worth storing whether or not our engine can replay it: ``import_tap_room`` converts it into our log when it can
(``imported``), says why not when it cannot (``not_replayed``: a mode or room option whose rules our engine does
not have, a card or general it does not know), and keeps the checks either way.
"""

from __future__ import annotations

import json
import lzma
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from importers.freekill.convert import ImportFailure
from importers.freekill.limits import BoundedReader, TooLarge, max_items
from importers.freekill.messages import Message
from importers.freekill.settings import not_judged
from importers.freekill.tap import MARKER, RoomTap, TapError, decode_payload, parse_log_line, parse_record
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb

if TYPE_CHECKING:
    from importers import Judged

TAP: Final = "freekill-tap"
# The start of a freekill.log line as spdlog writes it ("26-12-07 14:00:00.123 ..."), or a bare record.
_HEAD: Final = re.compile(rb"\d{2}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}|" + re.escape(MARKER.encode()))


def is_tap(head: bytes) -> bool:
    """Whether an input's first bytes (uncompressed; 17 are enough) are a tap log's."""
    return _HEAD.match(head) is not None


@dataclass(slots=True)
class TapRoom:
    """A room's tap record read: its records (``room``, with the checks, replies, seating, generals and roles),
    the lines as they are kept (``text``: the room's tap lines, one per line, in seq order), and its conversion
    (``messages`` for the converter) or why our engine does not replay it."""

    room: RoomTap
    text: bytes
    messages: list[Message] = field(default_factory=list)
    not_replayed: str = ""

    @property
    def judge(self) -> str:
        return judge_of(self.room)


def not_replayable(header: pb.GameHeader) -> str:
    """Why our engine cannot take a converted room's set-up (a general or package it does not know), or "": asked
    of the verifier itself, as the set-up is read before the first event."""
    from verifier import Verifier

    try:
        probe = Verifier(header)
    except Exception as err:  # (LogFormatError, ValueError, ...: a set-up it cannot take)
        return f"the verifier cannot take its set-up: {err}"
    return probe.stopped_reason if probe.stopped_at is not None else ""


def judge_of(room: RoomTap) -> str:
    """Who made a room's checks: FreeKill's core and the tap, as the meta record names them."""
    meta = room.meta or {}
    return f"FreeKill {meta.get('core') or '(core not named)'}, sgs-verify tap {meta.get('tap') or '?'}"


def looks_like_tap(data: bytes, max_bytes: int) -> bool:
    """Whether ``data`` (maybe xz or gzip) begins as a tap log."""
    from importers.freekill.api import opened

    try:
        with opened(data, max_bytes) as stream:
            return is_tap(stream.read(32))
    except (lzma.LZMAError, zlib.error, OSError, EOFError, TooLarge):
        return False  # (not readable as a tap log: the importer that reads it says why)


def import_tap_room(data: bytes, name: str = "", *, max_bytes: int) -> TapRoom:
    """Read one room's tap lines (other lines of a freekill.log are passed over); ImportFailure when they are not
    one room's complete, readable records."""
    from importers.freekill.api import needed, opened

    if len(data) > max_bytes:
        raise ImportFailure(f"the input is {len(data)} bytes; the limit is {max_bytes}")
    room: RoomTap | None = None
    kept: list[bytes] = []
    messages: list[Message] = []
    limit = max_items(max_bytes)
    try:
        with opened(data, max_bytes) as stream:
            reader = BoundedReader(stream, max_bytes, "the input")
            for number, raw in enumerate(reader.lines(reader.head(16)), 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ImportFailure(f"line {number} is not UTF-8 text") from None
                rec = parse_log_line(line) if not line.startswith(MARKER) \
                    else parse_record(line[len(MARKER):])
                if rec is None:
                    continue  # (another line of the server's log)
                if room is None:
                    room = RoomTap(rec.room, keep=False)
                elif rec.room != room.room:
                    raise ImportFailure(f"line {number} is room {rec.room}'s, after room {room.room}'s: one "
                                        "room's lines are imported at a time (the bridge's spool of it)")
                if rec.seq < room.next_seq:
                    continue  # (a line read twice)
                msg = room.add(rec)
                kept.append(raw.rstrip(b"\r\n") + b"\n")
                if len(kept) > limit:
                    raise ImportFailure(f"the record holds over {limit} records, this server's bound for its size")
                if msg is not None:
                    # (the data of a message the converter does not read is dropped, as for a transcript)
                    messages.append(msg if needed(msg.kind, msg.cmd) else
                                    Message(msg.seq, msg.kind, msg.cmd, None, msg.to, msg.by))
    except TooLarge as err:
        raise ImportFailure(str(err)) from None
    except (lzma.LZMAError, zlib.error, OSError, EOFError) as err:
        raise ImportFailure(f"the compressed input cannot be read: {err}") from None
    except TapError as err:
        raise ImportFailure(f"not a readable tap record: {err}") from None
    if room is None:
        raise ImportFailure("no tap record in the input (lines the sgs-verify tap writes into freekill.log)")
    meta = room.meta or {}
    settings = dict(meta.get("settings") or {})
    if meta.get("mode") is not None:
        settings["gameMode"] = meta["mode"]
    return TapRoom(room, b"".join(kept), messages, not_judged(settings))




_ROLES: Final = {"lord": 1, "loyalist": 2, "rebel": 3, "renegade": 4}  # sgsverify.v1.Role
_VERDICTS: Final = {"ok": 1, "refused": 2, "unjudged": 3}  # sgsverify.v1.ServerVerdict
_SOURCES: Final = {"client": 1, "ai": 2, "none": 3}  # sgsverify.v1.DecisionSource


def server_checks(room: RoomTap, reply_events: Mapping[int, int]) -> list[apb.ServerCheck]:
    """The room's checks as the contract has them: each with the player's seat and, where the reply became one,
    its first event (``reply_events``: Conversion.reply_events)."""
    seat_of = {fk: seat for seat, fk in enumerate(room.seats)}
    out = []
    for c in room.checks:
        check = apb.ServerCheck(record=c.seq, reply=c.reply, player=c.player, request=c.request,
                                source=_SOURCES.get(c.by, 0), verdict=_VERDICTS[c.verdict],  # type: ignore[arg-type]
                                code=c.code, why=c.why)
        if c.player in seat_of:
            check.seat = seat_of[c.player]
        if c.reply in reply_events:
            check.event = reply_events[c.reply]
        out.append(check)
    return out


def judged_room(data: bytes, name: str = "", *, max_bytes: int) -> Judged:
    """A room's tap lines for the service: converted when our engine replays such a room, and FreeKill's checks
    (each with the player's seat, and the event the reply became) in any case."""
    from importers import Judged, ServerRecord, ServerSeat
    from importers.freekill.api import _imported, _Read

    tr = import_tap_room(data, name, max_bytes=max_bytes)
    room = tr.room
    meta = room.meta or {}
    imported = None
    not_replayed = tr.not_replayed
    if not not_replayed:
        notes = [f"recorded by the sgs-verify tap {meta.get('tap') or '?'} on FreeKill "
                 f"{meta.get('core') or '(core version not given)'}"]
        try:
            imported = _imported(_Read(tr.messages, "", notes), TAP, name)
        except ImportFailure as err:
            not_replayed = f"its record cannot be converted: {err}"
    tr.messages = []
    events = imported.reply_events if imported is not None else {}
    checks = server_checks(room, events)
    source = name or f"FreeKill room {room.room}"
    players = room.seats or list(meta.get("ids") or [])
    # (a general's name as stored is at most 64 characters: FreeKill's are far shorter)
    seats = tuple(ServerSeat(f"freekill:{fk}", _ROLES.get(room.roles.get(fk, ""), 0), room.generals.get(fk, "")[:64])
                  for fk in players)
    finished, side, winners, reason = _result(room, players)
    server = ServerRecord(
        judge=tr.judge, checks=tuple(checks),
        client_replies=tuple(seq for seq, by in room.replies.items() if by == "client"), not_replayed=not_replayed,
        data=tr.text, format=FORMAT, source=source, records=room.next_seq - 1, seats=seats, finished=finished,
        side=side, winners=winners, result_reason=reason)
    return Judged(imported.log if imported is not None else None, server, dict(events))


FORMAT: Final = "fktap"  # how a room our engine does not replay is stored: its tap lines (storage's log_format)


def _result(room: RoomTap, players: list[int]) -> tuple[bool, int, tuple[int, ...], str]:
    """How FreeKill's game ended, from the tap's end record: the winners' roles (up to v0.5.21) or player ids."""
    if room.result is None:
        return False, 0, (), "the record ends before the game did"
    parts = [p for p in room.result.split("+") if p]
    if not parts:
        return True, 4, (), "FreeKill ended the game as a draw"  # SIDE_NONE
    if all(p.lstrip("-").isdigit() for p in parts):
        ids = {int(p) for p in parts}
        winners = tuple(i for i, fk in enumerate(players) if fk in ids)
        roles = {room.roles.get(fk, "") for fk in ids}
    else:
        roles = set(parts)
        winners = tuple(i for i, fk in enumerate(players) if room.roles.get(fk, "") in roles)
    side = 1 if "lord" in roles else 2 if "rebel" in roles else 3 if "renegade" in roles else 0
    return True, side, winners, f"FreeKill's game over: {room.result} won"


__all__ = ["FORMAT", "TAP", "TapRoom", "import_tap_room", "is_tap", "judge_of", "judged_room", "looks_like_tap",
           "not_replayable", "server_checks", "timeline"]


def _brief(value: object, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def timeline(text: bytes) -> list[tuple[int, str, str]]:
    """A stored room's records in words, in order: (seq, kind, what it says) — what a reader of the record sees
    of FreeKill's game where our engine did not replay it."""
    out: list[tuple[int, str, str]] = []
    for line in text.decode("utf-8", "replace").splitlines():
        try:
            rec = parse_log_line(line) if not line.startswith(MARKER) else parse_record(line[len(MARKER):])
        except TapError as err:
            out.append((0, "unreadable", str(err)))
            continue
        if rec is None:
            continue
        b = rec.body
        to = b.get("to")
        who = f"player {to}" if isinstance(to, int) else "players " + ",".join(str(t) for t in to) \
            if isinstance(to, list) else ""
        if rec.kind == "meta":
            what = f"room {rec.room}: {b.get('players')} players, mode {b.get('mode')}, FreeKill {b.get('core') or '?'}"
        elif rec.kind == "end":
            what = f"game over: {b.get('result') or 'a draw'} won"
        elif rec.kind == "check":
            what = (f"FreeKill's rules on reply {b.get('reply')} ({b.get('cmd')}, {who}, {b.get('by')}): "
                    f"{b.get('verdict')}" + (f" {b.get('code')}" if b.get("code") else "")
                    + (f": {b.get('why')}" if b.get("why") else ""))
        else:
            try:
                data = decode_payload(b["cbor"], "") if "cbor" in b else ("declined" if b.get("cancel") else "")
            except TapError as err:
                data = f"(unreadable: {err})"
            verb = {"notify": "to ", "request": "asks ", "reply": "from "}.get(rec.kind, "")
            what = f"{b.get('cmd')} {verb}{who}" + (f" ({b.get('by')})" if rec.kind == "reply" else "") \
                + (f": {_brief(data)}" if data != "" else "")
        out.append((rec.seq, rec.kind, what))
    return out
