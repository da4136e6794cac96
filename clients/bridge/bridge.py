"""`sgs-verify bridge`: a FreeKill server's rooms, verified live (docs/freekill-bridge.md).

One thread follows the server's log (clients/bridge/follower.py), finds the tap's records, keeps each
room's apart (spooled to the state directory before the follow position is saved), and converts each room
as its records come (importers.freekill.convert.Stream). Each room has a sender thread streaming its events
to the service's VerifyLive; the service's verdicts are printed as they come. A sender whose stream fails
(the service went away) waits and streams the room again from its first event, on a new stream: the
failed one stored nothing, and violations already printed are not printed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from clients.bridge.follower import Follower
from clients.bridge.state import Saved, StateDir
from clients.client import InvalidRequest, LiveCall, LiveUpdate, Metadata, ServiceError, VerifierClient
from importers.freekill.convert import DEFAULT_VERSION, ENGINE, ImportFailure, Stream
from importers.freekill.tap import RoomTap, TapError, TapRecord, parse_line
from sgsverify.v1 import game_log_pb2 as pb

MODES = frozenset({"aaa_role_mode"})  # FreeKill game modes the importer converts (identity)
SOURCES = {pb.DECISION_SOURCE_CLIENT: "client", pb.DECISION_SOURCE_AI: "ai", pb.DECISION_SOURCE_DEFAULT: "default"}
FORMAT = "freekill-tap"
# Conversion errors that mean "this room cannot be read", not a bug of ours to crash on.
_UNREADABLE = (ImportFailure, TapError, KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError)


@dataclass(slots=True)
class Settings:
    log: Path
    state: Path
    room_timeout: float = 600.0
    gap_wait: float = 10.0  # how long a room's missing record is waited for (rotation can reorder files)
    rotate_grace: float = 10.0
    poll: float = 0.2
    tournament: str = "freekill"
    submitter: str = "sgs-verify bridge"
    as_json: bool = False
    retry_max: float = 30.0


# ------------------------------------------------------------------------------------------ output


class Output:
    """Lines on stdout (text, or JSON lines with --json), one writer at a time."""

    def __init__(self, as_json: bool, out: TextIO | None = None) -> None:
        self.as_json = as_json
        self.out = out or sys.stdout
        self.lock = threading.Lock()

    def emit(self, kind: str, text: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, **fields}, ensure_ascii=False) if self.as_json else text
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()


class BridgeMetrics:
    """Prometheus metrics on their own registry (``--metrics HOST:PORT``)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        r = self.registry = CollectorRegistry(auto_describe=True)
        p = "sgs_verify_bridge"
        self.rooms_open = Gauge(f"{p}_rooms_open", "Rooms being followed now", registry=r)
        self.rooms = Counter(f"{p}_rooms", "Rooms ended, by outcome (finished, unfinished, silent, "
                             "uncheckable)", ["outcome"], registry=r)
        self.lines = Counter(f"{p}_tap_lines", "Tap records read from the log", registry=r)
        self.events = Counter(f"{p}_events", "Events judged by the service", registry=r)
        self.violations = Counter(f"{p}_violations", "Violations found, by code and who made the decision "
                                  "(client, ai, default, unspecified)", ["code", "source"], registry=r)
        self.lag = Histogram(f"{p}_lag_seconds", "From a tap line's time stamp to its event's verdict",
                             buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 300), registry=r)
        self.retries = Counter(f"{p}_stream_retries", "Live streams started again after a failure", registry=r)

    def serve(self, address: str) -> None:
        from prometheus_client import start_http_server

        host, _, port = address.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1", registry=self.registry)


# ------------------------------------------------------------------------------------------ rooms


@dataclass(eq=False)
class Room:
    """One game of one FreeKill room: its records, its conversion, the events for its stream."""

    room: int
    n: int
    first_line: str = ""  # its meta line (a room id is reused by the next game: a new meta line is a new game)
    tap: RoomTap = field(init=False)
    stream: Stream = field(default_factory=Stream)
    header: pb.GameHeader | None = None
    events: list[pb.Event] = field(default_factory=list)
    written: list[float] = field(default_factory=list)  # per event: its source line's time stamp
    seq_time: dict[int, float] = field(default_factory=dict)
    waiting: dict[int, tuple[TapRecord, str]] = field(default_factory=dict)  # records ahead of a missing one
    waiting_since: float | None = None
    last_seen: float = 0.0
    closed: bool = False  # no more events: the stream may end
    ended_why: str = ""
    over: bool = False  # done or skipped: nothing more to do
    counted: bool = False  # in the rooms_open gauge
    call: LiveCall | None = None
    printed: set[tuple[int, bool, str, str]] = field(default_factory=set)
    judged: int = 0  # events whose verdict has come (a stream streamed again from its start re-sends them)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.tap = RoomTap(self.room)

    @property
    def key(self) -> str:
        return f"{self.room}.{self.n}"

    def player(self, seat: int) -> int | None:
        if self.header is None or seat >= len(self.header.seats):
            return None
        name = self.header.seats[seat].player
        return int(name.split(":", 1)[1]) if name.startswith("freekill:") and name[9:].isdigit() else None


class Uncheckable(Exception):
    pass


class Bridge:
    def __init__(self, settings: Settings, client: VerifierClient, output: Output | None = None,
                 metrics: BridgeMetrics | None = None,
                 on_verdict: Callable[[Room, int, float], None] | None = None) -> None:
        self.s = settings
        self.client = client
        self.out = output or Output(settings.as_json)
        self.metrics = metrics or BridgeMetrics()
        self.on_verdict = on_verdict  # (room, event index, lag): every event judged (the benchmark's probe)
        self.state = StateDir(settings.state)
        self.rooms: dict[int, Room] = {}  # each room id's latest game
        self.senders: list[threading.Thread] = []
        self.stopping = threading.Event()
        self.spools: dict[str, Any] = {}  # open spool files, by room key
        self.touched: set[str] = set()
        self.follower: Follower | None = None

    # -------------------------------------------------------------- start, loop, stop

    def start(self) -> None:
        """Resume from the state directory: rooms ended are remembered, unfinished ones streamed again."""
        for saved in self.state.saved():
            self._resume(saved)
        self.follower = Follower(self.s.log, self.state.load_position(), grace=self.s.rotate_grace)

    def _resume(self, saved: Saved) -> None:
        room = Room(saved.room, saved.n)
        self.rooms[saved.room] = room
        if saved.outcome is not None:
            room.over = room.closed = True
            room.first_line = str(saved.outcome.get("first_line", ""))
            return
        room.last_seen = saved.mtime
        room.counted = True
        self.metrics.rooms_open.inc()
        for line in saved.lines:
            rec = self._parse(line)
            if rec is not None and not room.over:
                if not room.first_line:
                    room.first_line = line
                self._take(room, rec, line, spool=False)
        if not room.over:
            self._start_sender(room)

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Follow the log until stopped (``stop``, or ``until`` returns True)."""
        if self.follower is None:
            self.start()
        assert self.follower is not None
        try:
            while not self.stopping.is_set() and not (until is not None and until()):
                if not self.step():
                    self.stopping.wait(self.s.poll)
        finally:
            self.shutdown()

    def step(self) -> bool:
        """One poll of the log; whether it had lines."""
        assert self.follower is not None
        now = time.time()
        lines = self.follower.poll(now)
        for text, _ in lines:
            self.line(text, now)
        if lines:
            for key in self.touched:
                f = self.spools.get(key)
                if f is not None:
                    f.flush()
                    with contextlib.suppress(OSError):
                        os.fsync(f.fileno())
            self.touched.clear()
            self.state.save_position(self.follower.positions(), self.s.log)
        self.tick(now)
        return bool(lines)

    def stop(self) -> None:
        self.stopping.set()

    def shutdown(self) -> None:
        """Stop: open streams are cancelled (the service stores nothing of them; a restart streams them again)."""
        self.stopping.set()
        for room in self.rooms.values():
            with room.cond:
                room.cond.notify_all()
                call = room.call
            if call is not None:
                call.cancel()
        for t in self.senders:
            t.join(timeout=10)
        for f in self.spools.values():
            f.close()
        self.spools.clear()
        if self.follower is not None:
            self.follower.close()

    def wait_senders(self, timeout: float) -> bool:
        """Wait for every room's sender to end (tests, the benchmark); whether they all did."""
        end = time.monotonic() + timeout
        for t in list(self.senders):
            t.join(max(0.0, end - time.monotonic()))
        return not any(t.is_alive() for t in self.senders)

    # -------------------------------------------------------------- lines and rooms

    def _parse(self, line: str) -> TapRecord | None:
        try:
            return parse_line(line)
        except TapError as err:
            self.out.emit("unreadable", f"a tap line cannot be read: {err}", error=str(err))
            return None

    def line(self, text: str, now: float) -> None:
        rec = self._parse(text)
        if rec is None:
            return
        self.metrics.lines.inc()
        room = self.rooms.get(rec.room)
        if rec.seq == 1 and rec.kind == "meta" and (room is None or self._new_game(room, text)):
            if room is not None and not room.over:
                self.end_room(room, "its room id began a new game")
            room = Room(rec.room, room.n + 1 if room is not None else 1, first_line=text, counted=True)
            self.rooms[rec.room] = room
            self.metrics.rooms_open.inc()
            self.out.emit("room", f"room {rec.room}: a game begins", room=rec.room, game=room.n)
            self._take(room, rec, text, spool=True)
            if not room.over:
                self._start_sender(room)
            return
        if room is None:
            # Its start was before the bridge began (and not in its state): the set-up is missing.
            room = Room(rec.room, 1)
            self.rooms[rec.room] = room
            self.skip(room, f"its first {rec.seq - 1} records were written before the bridge began following")
            return
        if room.over:
            return
        room.last_seen = now
        self._take(room, rec, text, spool=True)

    @staticmethod
    def _new_game(room: Room, text: str) -> bool:
        first = room.first_line
        return first != text and hashlib.sha256(text.encode()).hexdigest() != first

    def _take(self, room: Room, rec: TapRecord, text: str, *, spool: bool) -> None:
        if rec.seq < room.tap.next_seq or rec.seq in room.waiting:
            return  # read again (after a restart, the log from the position saved before the spool's last lines)
        if spool:
            f = self.spools.get(room.key)
            if f is None:
                f = self.spools[room.key] = self.state.spool(room.key).open("a", encoding="utf-8")
            f.write(text.rstrip("\n") + "\n")
            self.touched.add(room.key)
        if rec.seq > room.tap.next_seq:
            room.waiting[rec.seq] = (rec, text)
            if room.waiting_since is None:
                room.waiting_since = time.time()
            return
        try:
            self._add(room, rec)
            while room.tap.next_seq in room.waiting:
                self._add(room, room.waiting.pop(room.tap.next_seq)[0])
        except Uncheckable as err:
            self.skip(room, str(err))
            return
        if not room.waiting:
            room.waiting_since = None

    def _add(self, room: Room, rec: TapRecord) -> None:
        try:
            msg = room.tap.add(rec)
        except TapError as err:
            raise Uncheckable(str(err)) from None
        room.seq_time[rec.seq] = rec.written if rec.written is not None else time.time()
        if rec.kind == "meta":
            mode = (room.tap.meta or {}).get("mode")
            if mode not in MODES:
                raise Uncheckable(f"its game mode is {mode!r}: only identity rooms (aaa_role_mode) are checked")
            return
        new: list[pb.Event] = []
        try:
            if msg is not None:
                new = room.stream.feed(msg)
            if room.header is None and room.stream.header is not None:
                room.header = self._header(room)
            if room.tap.ended:
                new += room.stream.finish()
                self._check_changed(room)
        except _UNREADABLE as err:
            raise Uncheckable(f"its record cannot be converted: {err}") from None
        with room.cond:
            if new:
                room.events += new
                room.written += [room.seq_time.get(room.stream.sources[i], time.time())
                                 for i in range(len(room.events) - len(new), len(room.events))]
            if room.tap.ended:
                room.closed = True
                room.ended_why = "finished"
            room.cond.notify_all()

    def _header(self, room: Room) -> pb.GameHeader:
        from verifier import LogFormatError, Verifier

        assert room.stream.header is not None
        header = pb.GameHeader()
        header.CopyFrom(room.stream.header)
        meta = room.tap.meta or {}
        o = header.origin
        o.engine, o.engine_version, o.format = ENGINE, DEFAULT_VERSION, FORMAT
        o.source = f"FreeKill room {room.room}"
        o.notes.append(f"recorded by the sgs-verify tap {meta.get('tap') or '?'} on FreeKill "
                       f"{meta.get('core') or '(core version not given)'}")
        header.recorder = f"FreeKill {DEFAULT_VERSION}, tap via sgs-verify bridge"
        try:
            probe = Verifier(header)  # a general or package the verifier does not know: say so now
        except (LogFormatError, ValueError, KeyError) as err:
            raise Uncheckable(f"the verifier cannot take its set-up: {err}") from None
        if probe.stopped_at is not None:
            raise Uncheckable(probe.stopped_reason)
        return header

    def _check_changed(self, room: Room) -> None:
        """Events the conversion changed after they were streamed (none in any game we have): the live verdict
        on them may differ from the offline one — say so."""
        if room.stream.changed:
            self.out.emit("changed", f"room {room.room}: events {room.stream.changed[:10]} changed after they were "
                          "streamed: check the room offline (sgs-verify check --from freekill)", room=room.room,
                          game=room.n, events=room.stream.changed)

    def skip(self, room: Room, why: str) -> None:
        """A room that cannot be checked: reported once, its stream cancelled (nothing stored)."""
        if room.over:
            return
        with room.cond:
            call = room.call
        if call is not None:
            call.cancel()  # before the stream could end by itself: a cancelled stream stores nothing
        room.over = room.closed = True
        self.out.emit("uncheckable", f"room {room.room}: cannot be checked: {why}", room=room.room, game=room.n,
                      reason=why)
        self.metrics.rooms.labels("uncheckable").inc()
        if room.counted:
            room.counted = False
            self.metrics.rooms_open.dec()
        self.state.mark(room.key, "skip", {"reason": why, "first_line": self._first(room)})
        with room.cond:
            room.cond.notify_all()

    @staticmethod
    def _first(room: Room) -> str:
        return hashlib.sha256(room.first_line.encode()).hexdigest() if room.first_line else ""

    def end_room(self, room: Room, why: str) -> None:
        """No more lines will come for the room: its stream ends with what it has (stored unfinished)."""
        if room.closed:
            return
        if room.header is None:
            self.skip(room, f"{why} before its first round: nothing to verify")
            return
        try:
            tail = room.stream.finish()
        except _UNREADABLE as err:
            self.skip(room, f"its record cannot be converted: {err}")
            return
        self._check_changed(room)
        with room.cond:
            room.events += tail
            room.written += [time.time()] * len(tail)
            room.closed = True
            room.ended_why = why
            room.cond.notify_all()
        self.out.emit("ended", f"room {room.room}: {why}: its game is stored unfinished", room=room.room,
                      game=room.n, reason=why)

    def tick(self, now: float) -> None:
        self.senders = [t for t in self.senders if t.is_alive()]
        for room in list(self.rooms.values()):
            if room.over:
                if room.key in self.spools:
                    self._close_spool(room)
                if room.events or room.tap.messages:
                    # Ended: keep what tells its lines from the next game's (the room id is reused), not the game.
                    self.rooms[room.room] = Room(room.room, room.n, first_line=self._first(room) or room.first_line,
                                                 over=True, closed=True)
                continue
            if room.waiting_since is not None and now - room.waiting_since >= self.s.gap_wait:
                self.skip(room, f"record {room.tap.next_seq} is missing (lines were lost)")
            elif not room.closed and room.last_seen and now - room.last_seen >= self.s.room_timeout:
                self.end_room(room, f"silent for {self.s.room_timeout:g} s")

    def _close_spool(self, room: Room) -> None:
        f = self.spools.pop(room.key, None)
        if f is not None:
            f.close()
        self.touched.discard(room.key)

    # -------------------------------------------------------------- streaming

    def _start_sender(self, room: Room) -> None:
        t = threading.Thread(target=self._send, args=(room,), name=f"room-{room.key}", daemon=True)
        self.senders.append(t)
        t.start()

    def _batches(self, room: Room, holder: list[LiveCall]) -> Iterator[list[pb.Event]]:
        sent = 0
        while True:
            with room.cond:
                while sent >= len(room.events) and not room.closed and not self.stopping.is_set() \
                        and not room.over:
                    room.cond.wait(1.0)
                if self.stopping.is_set() or room.over:
                    # Cancelled, never closed: a closed stream would be stored. (The call is made before this
                    # runs, but it is handed to us just after: wait for it.)
                    while not holder:
                        room.cond.wait(0.05)
                    holder[0].cancel()
                    return
                batch = room.events[sent:]
                done = room.closed
            sent += len(batch)
            yield batch
            if done and sent >= len(room.events):
                return

    def _send(self, room: Room) -> None:
        delay = 0.5
        failing = False
        while not self.stopping.is_set():
            with room.cond:
                while room.header is None and not room.over and not self.stopping.is_set():
                    room.cond.wait(1.0)
                if room.over or self.stopping.is_set():
                    return
                header = room.header
            assert header is not None
            metadata = Metadata(tournament=self.s.tournament, table=f"room {room.room}", round=f"game {room.n}",
                                submitter=self.s.submitter)
            holder: list[LiveCall] = []
            call = self.client.live_call(header, self._batches(room, holder), metadata)
            with room.cond:
                room.call = call
                holder.append(call)
                room.cond.notify_all()
            try:
                for update in call:
                    if failing:
                        failing = False
                        self.out.emit("service", f"room {room.room}: the service answers again; the room is "
                                      "streamed again from its start", room=room.room)
                    delay = 0.5
                    self._update(room, update)
                    if update.finished is not None:
                        self._stored(room, update)
                        return
            except InvalidRequest as err:
                self.skip(room, f"the service refused it: {err.details}")
                return
            except ServiceError as err:
                if self.stopping.is_set() or room.over:
                    return
                if not failing:
                    self.out.emit("service", f"room {room.room}: the live stream failed ({err.code.name}: "
                                  f"{err.details}); retrying", room=room.room, error=err.details)
                failing = True
            finally:
                with room.cond:
                    room.call = None
            self.metrics.retries.inc()
            self.stopping.wait(delay)
            delay = min(delay * 2, self.s.retry_max)

    def _update(self, room: Room, update: LiveUpdate) -> None:
        now = time.time()
        for ann in update.annotations:
            lag = None
            if not ann.derived and room.judged <= ann.index < len(room.written):
                # Counted once per event: after a retry the room is streamed again from its start, and the verdicts
                # of the events already judged come again.
                room.judged = ann.index + 1
                lag = max(0.0, now - room.written[ann.index])
                self.metrics.events.inc()
                self.metrics.lag.observe(lag)
                if self.on_verdict is not None:
                    self.on_verdict(room, ann.index, lag)
            for v in ann.violations:
                key = (ann.index, ann.derived, v.code, v.message)
                if key in room.printed:
                    continue
                room.printed.add(key)
                self._violation(room, ann.index, ann.derived, v, lag)

    def _violation(self, room: Room, index: int, derived: bool, v: Any, lag: float | None) -> None:
        ev = room.events[index] if not derived and index < len(room.events) else None
        seat: int | None = v.seat if v.HasField("seat") else None
        if seat is None and ev is not None:
            kind = ev.WhichOneof("kind")
            part = getattr(ev, kind) if kind else None
            if part is not None and "seat" in part.DESCRIPTOR.fields_by_name:
                seat = part.seat
        player = room.player(seat) if seat is not None else None
        source = SOURCES.get(ev.source, "unspecified") if ev is not None else "unspecified"
        self.metrics.violations.labels(v.code, source).inc()
        where = f"before event {index} (derived)" if derived else f"event {index}"
        who = f"player {player} (seat {seat})" if player is not None else \
            (f"seat {seat}" if seat is not None else "no seat")
        self.out.emit("violation", f"room {room.room}: {who}, {v.code}: {v.message} [{source} reply; {where}"
                      + (f", {lag:.1f} s after its line]" if lag is not None else "]"),
                      room=room.room, game=room.n, player=player, seat=seat, code=v.code, message=v.message,
                      source=source, event=index, derived=derived, lag_s=None if lag is None else round(lag, 3))

    def _stored(self, room: Room, update: LiveUpdate) -> None:
        assert update.finished is not None
        info = update.finished.info
        outcome = "finished" if update.game_over else ("silent" if room.ended_why.startswith("silent")
                                                       else "unfinished")
        self.metrics.rooms.labels(outcome).inc()
        if room.counted:
            room.counted = False
            self.metrics.rooms_open.dec()
        self.state.mark(room.key, "done", {"replay": info.id, "created": update.finished.created,
                                           "violations": info.violation_count, "outcome": outcome,
                                           "first_line": self._first(room)})
        room.over = True
        stored = "stored" if update.finished.created else "already stored"
        self.out.emit("stored", f"room {room.room}: game {'over' if update.game_over else 'not over'}, "
                      f"{info.violation_count} violation(s); {stored} as {info.id}", room=room.room, game=room.n,
                      replay=info.id, created=update.finished.created, violations=info.violation_count,
                      game_over=update.game_over)


__all__ = ["Bridge", "BridgeMetrics", "Output", "Room", "Settings"]
