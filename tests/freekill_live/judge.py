"""Reading back what the tap wrote (test code): the rotated log in order, each room's records, the
room as a transcript the importer reads, its verdict, and the tap's coverage against the host's view."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from importers.freekill import import_freekill
from importers.freekill.convert import convert
from importers.freekill.messages import NOTIFY, REPLY, REQUEST
from importers.freekill.tap import MARKER, RoomTap, read_tap
from sgsverify.v1 import game_log_pb2 as pb
from tests.freekill_live.host import GameRecord, HostView
from tests.freekill_live.host import place_cheats as host_place_cheats
from verifier import verify

# What FreeKill's own SmartAI does that the rules forbid (tests/data/freekill/expected.json holds the same
# codes for the shared AI games): 制衡 with no card, 结姻 at a wrong target or without two hand cards,
# 反间 with no hand card to give, 火攻 on oneself. Never on a client's reply.
AI_DEVIATIONS = frozenset({"SKILL_COST", "INVALID_TARGET", "SKILL_PRECONDITION"})
DECISIONS = frozenset({"use_card", "respond", "decline", "choose_cards", "invoke_skill", "end_play_phase",
                       "pick_general", "choose_suit", "choose_option"})


def log_files(path: Path) -> list[Path]:
    """The log and its rotated files, oldest first (``name.N`` … ``name.1``, then ``name``)."""
    rotated = sorted((p for p in path.parent.glob(path.name + ".*") if p.suffix[1:].isdigit()),
                     key=lambda p: -int(p.suffix[1:]))
    return [*rotated, path] if path.exists() else rotated


def log_lines(path: Path) -> Iterator[str]:
    for f in log_files(path):
        with open(f, encoding="utf-8") as fh:
            yield from fh


def raw_records(path: Path) -> dict[int, list[dict[str, Any]]]:
    """Each room's record objects, in the order written."""
    rooms: dict[int, list[dict[str, Any]]] = {}
    for line in log_lines(path):
        at = line.find(MARKER)
        if at >= 0:
            obj = json.loads(line[at + len(MARKER):])
            rooms.setdefault(obj["room"], []).append(obj)
    return rooms


def read_rooms(path: Path) -> dict[int, RoomTap]:
    return read_tap(log_lines(path))


def transcript_of(room: RoomTap) -> bytes:
    """The room in the shared transcript format (the tap's seq kept as the line's seq)."""
    assert room.meta is not None
    lines = [{"seq": 0, "kind": "meta", "players": room.meta["players"], "settings": room.meta["settings"]}]
    kinds = {NOTIFY: "notify", REQUEST: "request", REPLY: "ai_reply"}
    for msg in room.messages:
        line: dict[str, Any] = {"seq": msg.seq, "kind": kinds[msg.kind], "cmd": msg.cmd, "data": msg.data}
        line["to"] = msg.to[0] if msg.kind != NOTIFY else list(msg.to)
        lines.append(line)
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()


@dataclass(slots=True)
class Verdict:
    log: pb.GameLog
    sources: list[int]
    followed: bool
    finished: bool
    stopped: str
    # (event index, transcript seq of the event, seat, code, message)
    violations: list[tuple[int, int, int, str, str]] = field(default_factory=list)


def judge(room: RoomTap, via_transcript: bool = True) -> Verdict:
    """The room's verdict: through a transcript file and ``import_freekill`` (what an operator can
    run offline), or straight from the reader's messages (which keep each reply's ``by``)."""
    if via_transcript:
        imported = import_freekill(transcript_of(room), f"room-{room.room}.jsonl")
        log, sources = imported.log, imported.sources
    else:
        conv = convert(room.messages)
        log, sources = conv.log, conv.sources
    replay = verify(log)
    out = Verdict(log, sources, replay.followed, replay.result.finished,
                  "" if replay.followed else f"{replay.stopped_at}: {replay.stopped_reason}")
    for ann in replay.annotations:
        seat = _seat_of(log.events[ann.index])
        for v in ann.violations:
            out.violations.append((ann.index, sources[ann.index], seat, v.code, v.message))
    return out


def decision_after(verdict: Verdict, seq: int, seat: int) -> int | None:
    """The first decision of ``seat`` that the record from ``seq`` on led to (the event a reply made: a reply that
    moves nothing, a discard naming no card, is its event itself)."""
    for i, ev in enumerate(verdict.log.events):
        kind = ev.WhichOneof("kind")
        if verdict.sources[i] >= seq and kind in DECISIONS and _seat_of(ev) == seat:
            return i
    return None


def _seat_of(ev: pb.Event) -> int:
    kind = ev.WhichOneof("kind")
    value = getattr(getattr(ev, kind), "seat", -1) if kind else -1
    return value if isinstance(value, int) else -1


def tap_view(records: list[dict[str, Any]]) -> HostView:
    """The tap's records of one room in the host's terms: notifications per player, requests."""
    view = HostView()
    for rec in records:
        if rec["kind"] == "notify":
            payload = base64.b64decode(rec["cbor"])
            for pid in rec["to"]:
                view.notifications.setdefault(pid, []).append((rec["cmd"], payload))
        elif rec["kind"] == "request":
            view.requests.append((rec["to"], rec["cmd"], base64.b64decode(rec["cbor"]), rec["timeout"]))
    return view


def host_view_without_change_self(record: GameRecord) -> dict[int, list[tuple[str, bytes]]]:
    """ChangeSelf goes to the client object directly, past the tap's hook: the one message the tap cannot see."""
    return {pid: [n for n in notes if n[0] != "ChangeSelf"] for pid, notes in record.view.notifications.items()}


def place_cheats(record: GameRecord, records: list[dict[str, Any]]) -> None:
    """Each cheat's ``seq`` from the tap's records as read back from the log."""
    host_place_cheats(record.cheats, records)


@dataclass(slots=True)
class CheatResult:
    kind: str
    player: int
    seat: int
    seq: int | None  # the tap's reply record
    by: str  # the tap's attribution of that reply
    event: int | None  # the decision it led to
    codes: list[str]  # the violations on that event
    expected: str
    source: int  # the event's DecisionSource (0 while the importer does not set it)

    @property
    def caught(self) -> bool:
        return self.by == "client" and self.event is not None and self.expected in self.codes


@dataclass(slots=True)
class GameResult:
    room: int
    followed: bool
    finished: bool
    events: int
    cheats: list[CheatResult]
    client_replies: int
    # violations on the decisions other client replies led to (must stay empty)
    other_client_violations: list[tuple[int, int, int, str, str]]
    # violations on every other decision (AI, default), by code
    other_codes: dict[str, int]
    # the same, by the last cheat before them (a cheat the verifier refuses leaves it out of step)
    after_cheat: dict[str, int] = field(default_factory=dict)
    # violations on decisions the importer says a client made (Event.source), other than the cheats'
    client_source_violations: list[tuple[int, int, int, str, str]] = field(default_factory=list)


def evaluate(record: GameRecord, log_path: Path, rooms: dict[int, RoomTap] | None = None,
             raw: dict[int, list[dict[str, Any]]] | None = None) -> GameResult:
    """One room of the log, judged, with each of the host's cheats looked up at the event it led to
    (``rooms`` and ``raw``: the log already read, for many rooms of one log)."""
    records = (raw if raw is not None else raw_records(log_path))[record.room_id]
    place_cheats(record, records)
    verdict = judge((rooms if rooms is not None else read_rooms(log_path))[record.room_id], via_transcript=False)
    by_seq = {r["seq"]: r for r in records}
    results = []
    claimed: set[int] = set()
    for cheat in record.cheats:
        seat = record.seats.index(cheat.player)
        event = decision_after(verdict, cheat.seq, seat) if cheat.seq is not None else None
        codes = [v[3] for v in verdict.violations if v[0] == event]
        if event is not None:
            claimed.add(event)
        by = by_seq[cheat.seq]["by"] if cheat.seq is not None else ""
        source = verdict.log.events[event].source if event is not None else 0
        results.append(CheatResult(cheat.kind, cheat.player, seat, cheat.seq, by, event, codes,
                                   cheat.expected_code, source))
    cheat_seqs = {c.seq for c in record.cheats}
    others: list[tuple[int, int, int, str, str]] = []
    client_replies = 0
    for rec in records:
        if rec["kind"] == "reply" and rec["by"] == "client":
            client_replies += 1
            if rec["seq"] in cheat_seqs:
                continue
            event = decision_after(verdict, rec["seq"], record.seats.index(rec["to"]))
            if event is not None:
                claimed.add(event)
                others.extend(v for v in verdict.violations if v[0] == event)
    other_codes: dict[str, int] = {}
    after_cheat: dict[str, int] = {}
    cheat_events = sorted((c.event, c.kind) for c in results if c.event is not None)
    for v in verdict.violations:
        if v[0] not in claimed:
            other_codes[v[3]] = other_codes.get(v[3], 0) + 1
            last = [kind for event, kind in cheat_events if event < v[0]]
            key = last[-1] if last else "(before any cheat)"
            after_cheat[key] = after_cheat.get(key, 0) + 1
    cheats_at = {c.event for c in results}
    by_client = [v for v in verdict.violations if v[0] not in cheats_at
                 and verdict.log.events[v[0]].source == pb.DECISION_SOURCE_CLIENT]
    return GameResult(record.room_id, verdict.followed, verdict.finished, len(verdict.log.events), results,
                      client_replies, others, other_codes, after_cheat, by_client)
