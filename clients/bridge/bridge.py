"""`sgs-verify bridge`: a FreeKill server's rooms, verified live (docs/freekill-bridge.md).

One thread follows the server's log (clients/bridge/follower.py), finds the tap's records (the marker only
where the tap writes it, each record checked: a bad line is skipped with its reason), keeps each room's apart
(spooled to the state directory before the follow position is saved), and converts each room as its records
come (importers.freekill.convert.Stream). At most ``max_rooms`` rooms are followed at once: a room opened
beyond that is reported and not followed. Every open room's events are streamed to the service's VerifyLive
by one asyncio loop in one more thread (clients/bridge/live.py: a task and a call per room, no thread); the
service's verdicts are printed as they come. A room whose stream fails (the service went away) waits and is
streamed again from its first event, on a new stream: the failed one stored nothing, and violations already
printed are not printed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import grpc

from clients.bridge import DEFAULT_MAX_ROOMS
from clients.bridge.follower import Follower, Overlong
from clients.bridge.live import Connection, LiveLoop, Stopped, events_request, header_request, live_update, stopped_of
from clients.bridge.state import Printed, Saved, StateDir, StateError, Violation
from clients.client import InvalidRequest, LiveUpdate, Metadata, ServiceError, VerifierClient, service_error
from importers.freekill.convert import DEFAULT_VERSION, ENGINE, Stream
from importers.freekill.settings import not_judged
from importers.freekill.tap import (
    MAX_RECORD_BYTES,
    REASONS,
    TOO_LONG,
    RoomTap,
    ServerCheck,
    TapError,
    TapRecord,
    parse_log_line,
    tap_text,
)
from importers.freekill.taproom import judge_of, not_replayable, server_checks
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb

SOURCES = {pb.DECISION_SOURCE_CLIENT: "client", pb.DECISION_SOURCE_AI: "ai", pb.DECISION_SOURCE_DEFAULT: "default"}
FORMAT = "freekill-tap"
# A line is read whole up to the record limit and a little more for its prefix (date, thread, level).
MAX_LINE_BYTES = MAX_RECORD_BYTES + 256
# The unreadable reason of a record the bridge failed on itself (a bug of ours, not the record's fault).
INTERNAL = "internal"
# Who judged a client reply (sgs_verify_bridge_client_replies_total{judged_by}; the stored line's coverage).
JUDGED_BY = ("both", "engine", "freekill", "neither")


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
    max_rooms: int = DEFAULT_MAX_ROOMS  # rooms followed at once; one opened beyond is not followed


# ------------------------------------------------------------------------------------------ output


class Sink(Protocol):
    """Where Output writes (stdout, or anything with its write and flush)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class Output:
    """Lines on stdout (text, or JSON lines with --json), one writer at a time."""

    def __init__(self, as_json: bool, out: Sink | None = None) -> None:
        self.as_json = as_json
        self.out: Sink = out or sys.stdout
        self.lock = threading.Lock()

    def emit(self, kind: str, text: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, **fields}, ensure_ascii=False) if self.as_json else text
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()


def _stderr(text: str) -> None:
    print(f"sgs-verify: {text}", file=sys.stderr, flush=True)


class BridgeMetrics:
    """Prometheus metrics on their own registry (``--metrics HOST:PORT``)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        r = self.registry = CollectorRegistry(auto_describe=True)
        p = "sgs_verify_bridge"
        self.rooms_open = Gauge(f"{p}_rooms_open", "Rooms being followed now", registry=r)
        self.rooms = Counter(f"{p}_rooms", "Rooms ended, by outcome (finished, unfinished, silent, "
                             "uncheckable)", ["outcome"], registry=r)
        self.over_limit = Counter(f"{p}_rooms_over_limit", "Rooms not followed: --max-rooms rooms were open "
                                  "(each also counted as uncheckable)", registry=r)
        self.stopped = Counter(f"{p}_rooms_stopped", "Rooms whose game the verifier stopped following (its "
                               "events from there not checked)", registry=r)
        self.lines = Counter(f"{p}_tap_lines", "Tap records read from the log", registry=r)
        self.unreadable = Counter(f"{p}_unreadable_lines", "Tap lines skipped, by reason (" + ", ".join(REASONS)
                                  + f", {INTERNAL})", ["reason"], registry=r)
        for reason in (*REASONS, INTERNAL):
            self.unreadable.labels(reason)
        self.events = Counter(f"{p}_events", "Events judged by the service", registry=r)
        self.violations = Counter(f"{p}_violations", "Violations found, by code and who made the decision "
                                  "(client, ai, default, unspecified)", ["code", "source"], registry=r)
        self.lag = Histogram(f"{p}_lag_seconds", "From a tap line's time stamp to its event's verdict",
                             buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 300), registry=r)
        self.retries = Counter(f"{p}_stream_retries", "Live streams started again after a failure", registry=r)
        self.server_refusals = Counter(f"{p}_server_refusals", "Replies FreeKill's own rules refused (the tap's "
                                       "reply check, in the server), by code and who made the reply",
                                       ["code", "source"], registry=r)
        self.not_replayed = Counter(f"{p}_rooms_not_replayed", "Rooms this engine does not replay (a mode, room "
                                    "option, card or general it does not have): judged by FreeKill's rules only",
                                    registry=r)
        self.replies = Counter(f"{p}_client_replies", "Client replies of the rooms stored, by who judged them "
                               "(both, engine, freekill, neither)", ["judged_by"], registry=r)
        for judge in JUDGED_BY:
            self.replies.labels(judge)

    def serve(self, address: str) -> None:
        from prometheus_client import start_http_server

        host, _, port = address.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1", registry=self.registry)


# ------------------------------------------------------------------------------------------ rooms


@dataclass(eq=False)
class Room:
    """One game of one FreeKill room: its records, its conversion, the events for its stream.

    The follower's thread adds to it; the live loop's sender reads its events and header (under ``lock``) and
    is woken (``wake``) when there is more."""

    room: int
    n: int
    first_line: str = ""  # its meta line (a room id is reused by the next game: a new meta line is a new game)
    tap: RoomTap = field(init=False)
    stream: Stream = field(default_factory=Stream)
    header: pb.GameHeader | None = None
    events: list[pb.Event] = field(default_factory=list)
    written: list[float] = field(default_factory=list)  # per event: its source line's time stamp
    seq_time: array[float] = field(default_factory=lambda: array("d"))  # each record's time stamp, by seq - 1
    waiting: dict[int, tuple[TapRecord, str]] = field(default_factory=dict)  # records ahead of a missing one
    waiting_since: float | None = None
    last_seen: float = 0.0
    closed: bool = False  # no more events: the stream may end
    ended_why: str = ""
    over: bool = False  # done or skipped: nothing more to do
    # Violations printed at or after the last event judged; those before it were printed by the time it was
    # (state.Printed: kept in the state directory, so that a restart does not print and count them again)
    printed: set[Violation] = field(default_factory=set)
    judged: int = 0  # events whose verdict has come (a stream streamed again from its start re-sends them)
    stopped: Stopped | None = None  # the verifier stopped following its game (said once)
    # Why this engine does not replay the room ("" when it does): the room is then followed for FreeKill's own
    # verdicts (the tap's checks) only, and its record stored whole at its end (docs/freekill-bridge.md#two-engines)
    not_replayed: str = ""
    checks_printed: int = 0  # the seq of the last check record whose refusal was printed (state.Printed.checks)
    lock: threading.Lock = field(default_factory=threading.Lock)
    wake: asyncio.Event | None = None  # its sender's (on the live loop)

    def __post_init__(self) -> None:
        self.tap = RoomTap(self.room, keep=False)  # (each message is handed on to the conversion, none kept)

    @property
    def key(self) -> str:
        return f"{self.room}.{self.n}"

    def settle(self) -> bool:
        """Mark it over; whether it was open until now (its end is reported once, by whoever settled it)."""
        with self.lock:
            if self.over:
                return False
            self.over = self.closed = True
            return True

    def player(self, seat: int) -> int | None:
        if self.header is None or seat >= len(self.header.seats):
            return None
        name = self.header.seats[seat].player
        return int(name.split(":", 1)[1]) if name.startswith("freekill:") and name[9:].isdigit() else None


@dataclass(slots=True)
class Ended:
    """A room id's last game, over: what tells its lines (read again, or late) from a new game's."""

    n: int
    first: str  # the SHA-256 of its meta line ("" when not known)


class Uncheckable(Exception):
    """A room that cannot be followed at all (a malformed record, lost lines)."""


class NotReplayed(Exception):
    """A room this engine does not replay (a mode, room option, card or general it does not have): FreeKill's own
    verdicts on its replies are still followed and the room stored."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Bridge:
    def __init__(self, settings: Settings, client: VerifierClient | Connection, output: Output | None = None,
                 metrics: BridgeMetrics | None = None,
                 on_verdict: Callable[[Room, int, float], None] | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        """``client``: where the service is (a VerifierClient's address, token and environment's TLS files, or a
        Connection). StateError if the state directory cannot be made or written."""
        self.s = settings
        self.connection = client if isinstance(client, Connection) else Connection.of(client)
        self.out = output or Output(settings.as_json)
        self.metrics = metrics or BridgeMetrics()
        self.on_verdict = on_verdict  # (room, event index, lag): every event judged (the benchmark's probe)
        self.notice = notice or _stderr  # what the operator is told on stderr
        self.state = StateDir(settings.state)
        if self.state.created:
            self.notice(f"created the state directory {settings.state.absolute()}")
        self.rooms: dict[int, Room] = {}  # each room id's game being followed
        self.ended: dict[int, Ended] = {}  # each room id's last game, when it is over
        self.open: dict[str, Room] = {}  # every room not yet let go, by key (a room id's game ended by a new one
        # streams on): at most max_rooms
        self.live = LiveLoop(self.connection)
        self.stopping = threading.Event()
        self.failure: StateError | None = None  # (a state write failed on the live loop: the bridge stops)
        self.spools: dict[str, Any] = {}  # open spool files, by room key
        self.touched: set[str] = set()
        self.woken: set[Room] = set()  # rooms whose sender has something new
        self.woken_lock = threading.Lock()
        self.follower: Follower | None = None
        self.waiting_for_log = False

    # -------------------------------------------------------------- start, loop, stop

    def start(self) -> None:
        """Resume from the state directory: rooms ended are remembered, unfinished ones streamed again.
        ValueError for a log path that is not a file; StateError for a state directory that cannot be read."""
        log = self.s.log
        if log.exists() and not log.is_file():
            raise ValueError(f"{log} is not a file")
        self.live.start()
        try:
            saved = self.state.saved()
        except OSError as err:
            raise StateError(f"the state directory {self.s.state} cannot be read: {err}") from None
        for entry in saved:
            self._resume(entry)
        self.follower = Follower(log, self.state.load_position(), grace=self.s.rotate_grace,
                                 max_line=MAX_LINE_BYTES)
        if not log.exists():
            self.waiting_for_log = True
            self.notice(f"{log.absolute()} does not exist yet: waiting for it (FreeKill's server creates it when "
                        "it starts)")
        self._wake_touched()

    def _resume(self, saved: Saved) -> None:
        if saved.outcome is not None:
            self.ended[saved.room] = Ended(saved.n, str(saved.outcome.get("first_line", "")))
            self.rooms.pop(saved.room, None)
            return
        first = saved.lines[0] if saved.lines else ""
        if self._open_count() >= self.s.max_rooms:
            self._refuse(saved.room, saved.n, first, "it was not resumed")
            return
        room = Room(saved.room, saved.n, first_line=first, last_seen=saved.mtime,
                    printed=set(saved.printed.past), judged=saved.printed.through + 1,
                    checks_printed=saved.printed.checks)
        self.rooms[saved.room] = room
        self.ended.pop(saved.room, None)
        self.open[room.key] = room
        self.metrics.rooms_open.inc()
        for line in saved.lines:
            rec = self._parse(line)
            if rec is not None and not room.over and rec.room == room.room:
                self._take(room, rec, line, spool=False)
        if not room.over:
            self._start_sender(room)

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Follow the log until stopped (``stop``, or ``until`` returns True). StateError when the state
        directory cannot be written."""
        if self.follower is None:
            self.start()
        assert self.follower is not None
        try:
            while not self.stopping.is_set() and not (until is not None and until()):
                if not self.step():
                    self.stopping.wait(self.s.poll)
        finally:
            self.shutdown()
        if self.failure is not None:
            raise self.failure

    def step(self) -> bool:
        """One poll of the log; whether it read anything."""
        assert self.follower is not None
        now = time.time()
        lines = self.follower.poll(now)
        if self.waiting_for_log and self.follower.exists():
            self.waiting_for_log = False
            self.notice(f"{self.s.log.absolute()} exists now: following it")
        for text, _ in lines:
            self.line(text, now)
        if lines:
            try:
                for key in self.touched:
                    f = self.spools.get(key)
                    if f is not None:
                        f.flush()
                        with contextlib.suppress(OSError):  # (a file system without fsync: flushed is all)
                            os.fsync(f.fileno())
                self.state.save_position(self.follower.positions(), self.s.log)
            except OSError as err:
                raise StateError(f"the state directory {self.s.state} cannot be written: {err}") from None
            self.touched.clear()
        self.tick(now)
        return bool(lines) or self.follower.read_bytes > 0

    def stop(self) -> None:
        self.stopping.set()

    def shutdown(self) -> None:
        """Stop: open streams are cancelled (the service stores nothing of them; a restart streams them again)."""
        self.stopping.set()
        self.live.close(timeout=10)
        for f in self.spools.values():
            f.close()
        self.spools.clear()
        if self.follower is not None:
            self.follower.close()

    def wait_senders(self, timeout: float) -> bool:
        """Wait for every room's sender to end (tests, the benchmark); whether they all did."""
        end = time.monotonic() + timeout
        while self.live.busy() and time.monotonic() < end:
            time.sleep(0.05)
        return not self.live.busy()

    # -------------------------------------------------------------- lines and rooms

    def _unreadable(self, why: str, reason: str) -> None:
        self.metrics.unreadable.labels(reason).inc()
        self.out.emit("unreadable", f"a tap line cannot be read: {why}", error=why, reason=reason)

    def _parse(self, line: str) -> TapRecord | None:
        try:
            return parse_log_line(line)
        except TapError as err:
            self._unreadable(str(err), err.reason)
            return None

    def line(self, text: str | Overlong, now: float) -> None:
        """One line of the log: a tap record is taken into its room; any other line is passed over; a tap line
        that is not a valid record is reported (``unreadable``, with its reason) and skipped."""
        if isinstance(text, Overlong):
            if tap_text(text.head) is not None:
                self._unreadable(f"a tap line of {text.size} bytes (over {MAX_LINE_BYTES})", TOO_LONG)
            return
        rec = self._parse(text)
        if rec is None:
            return
        self.metrics.lines.inc()
        try:
            self._record(rec, text, now)
        except (StateError, OSError):
            raise
        except Exception as err:  # a fault of ours on one record: its room is given up, the bridge goes on
            why = f"room {rec.room} seq {rec.seq}: the bridge failed on it ({type(err).__name__}: {err})"
            room = self.rooms.get(rec.room)
            if room is not None:
                self.skip(room, why)
            else:
                self._unreadable(why, INTERNAL)

    def _record(self, rec: TapRecord, text: str, now: float) -> None:
        room = self.rooms.get(rec.room)
        if rec.seq == 1 and rec.kind == "meta":
            ended = self.ended.get(rec.room)
            first = room.first_line if room is not None else ended.first if ended is not None else None
            if first is None or self._new_game(first, text):
                self._open_game(rec, text, now, room, ended)
                return
            # (else its meta line read again: ignored as a duplicate)
        if room is None or room.over:
            if room is None and rec.room not in self.ended:
                # Its start was before the bridge began (and not in its state): the set-up is missing.
                self.ended[rec.room] = Ended(1, "")
                self._report_skip(rec.room, 1, f"its first {rec.seq - 1} records were written before the bridge "
                                  "began following", "")
            return
        room.last_seen = now
        self._take(room, rec, text, spool=True)

    @staticmethod
    def _new_game(first: str, text: str) -> bool:
        return first != text and _sha(text) != first

    def _open_game(self, rec: TapRecord, text: str, now: float, old: Room | None, ended: Ended | None) -> None:
        if old is not None and not old.over:
            self.end_room(old, "its room id began a new game")
        n = (old.n if old is not None else ended.n if ended is not None else 0) + 1
        self.rooms.pop(rec.room, None)
        self.ended.pop(rec.room, None)
        if self._open_count() >= self.s.max_rooms:
            self._refuse(rec.room, n, text, "it is not followed")
            return
        room = Room(rec.room, n, first_line=text, last_seen=now)
        self.rooms[rec.room] = room
        self.open[room.key] = room
        self.metrics.rooms_open.inc()
        self.out.emit("room", f"room {rec.room}: a game begins", room=rec.room, game=room.n)
        self._take(room, rec, text, spool=True)
        if not room.over:
            self._start_sender(room)

    def _open_count(self) -> int:
        for room in [r for r in self.open.values() if r.over]:
            self._let_go(room)
        return len(self.open)

    def _refuse(self, room_id: int, n: int, first_line: str, what: str) -> None:
        """A room over the limit: reported (uncheckable, and counted as over the limit) and not followed."""
        first = _sha(first_line) if first_line else ""
        self.ended[room_id] = Ended(n, first)
        self.metrics.over_limit.inc()
        # (not durable: a flood of rooms is not a flood of fsyncs; a marker lost in a crash costs a second report)
        self._report_skip(room_id, n, f"{self.s.max_rooms} rooms are followed already (--max-rooms): {what}",
                          first, durable=False)

    def _take(self, room: Room, rec: TapRecord, text: str, *, spool: bool) -> None:
        if rec.seq < room.tap.next_seq or rec.seq in room.waiting:
            return  # read again (after a restart, the log from the position saved before the spool's last lines)
        if spool:
            try:
                f = self.spools.get(room.key)
                if f is None:
                    f = self.spools[room.key] = self.state.spool(room.key).open("a", encoding="utf-8")
                f.write(text.rstrip("\n") + "\n")
            except OSError as err:
                raise StateError(f"the state directory {self.s.state} cannot be written: {err}") from None
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
        except NotReplayed as err:
            self.not_replayed(room, str(err))
        if not room.waiting:
            room.waiting_since = None

    def _add(self, room: Room, rec: TapRecord) -> None:
        try:
            msg = room.tap.add(rec)
        except TapError as err:
            raise Uncheckable(str(err)) from None
        if len(room.seq_time) == rec.seq - 1:  # (records come in seq order: their times are kept as an array)
            room.seq_time.append(rec.written if rec.written is not None else time.time())
        if rec.kind == "check":
            self._check(room, room.tap.checks[-1])
        if rec.kind == "meta":
            meta = room.tap.meta or {}
            settings = dict(meta.get("settings") or {})
            if meta.get("mode") is not None:
                settings["gameMode"] = meta["mode"]  # (the record's own mode field, as the tap reader takes it)
            why = not_judged(settings)  # (the mode, and room options whose rules our engine does not have)
            if why:
                raise NotReplayed(why)
            return
        if room.not_replayed:
            if room.tap.ended:
                self._close_record(room, "finished")
            return
        new: list[pb.Event] = []
        header = None
        try:
            if msg is not None:
                new = room.stream.feed(msg)
            if room.header is None and room.stream.header is not None:
                header = self._header(room)
            if room.tap.ended:
                new += room.stream.finish()
                self._check_changed(room)
        except NotReplayed:
            raise
        except Exception as err:  # any conversion error: this engine cannot replay the room (the others go on)
            raise NotReplayed(f"its record cannot be converted: {err}") from None
        with room.lock:
            if header is not None:
                room.header = header
            if new:
                room.events += new
                room.written += [_time_of(room, room.stream.sources[i])
                                 for i in range(len(room.events) - len(new), len(room.events))]
            if room.tap.ended:
                room.closed = True
                room.ended_why = "finished"
        if header is not None or new or room.tap.ended:
            self._touch(room)

    def _header(self, room: Room) -> pb.GameHeader:
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
        why = not_replayable(header)  # a general or package the verifier does not know: say so now
        if why:
            raise NotReplayed(why)
        return header

    def _check_changed(self, room: Room) -> None:
        """Events the conversion changed after they were streamed (none in any game we have): the live verdict
        on them may differ from the offline one — say so."""
        if room.stream.changed:
            self.out.emit("changed", f"room {room.room}: events {room.stream.changed[:10]} changed after they were "
                          "streamed: check the room offline (sgs-verify check --from freekill)", room=room.room,
                          game=room.n, events=room.stream.changed)

    def _report_skip(self, room_id: int, n: int, why: str, first: str, *, durable: bool = True) -> None:
        self.out.emit("uncheckable", f"room {room_id}: cannot be checked: {why}", room=room_id, game=n, reason=why)
        self.metrics.rooms.labels("uncheckable").inc()
        self.state.mark(f"{room_id}.{n}", "skip", {"reason": why, "first_line": first}, durable=durable)

    def skip(self, room: Room, why: str) -> None:
        """A room that cannot be checked: reported once, its stream cancelled (nothing stored)."""
        if not room.settle():
            return
        self.metrics.rooms_open.dec()
        self._report_skip(room.room, room.n, why, self._first(room))
        self._touch(room)  # its sender cancels its call: a cancelled stream stores nothing

    def not_replayed(self, room: Room, why: str) -> None:
        """A room this engine does not replay: said once; its live stream cancelled (nothing of it stored), and
        the room followed on for FreeKill's own verdicts, its record stored whole at its end."""
        with room.lock:
            if room.over or room.not_replayed:
                return
            room.not_replayed = why
            room.events.clear()
            room.written.clear()
        self.metrics.not_replayed.inc()
        self.out.emit("not_replayed", f"room {room.room}: this engine does not replay it: {why}; FreeKill's own rules "
                      "check its client replies (the tap's check), and its record is stored at its end",
                      room=room.room, game=room.n, reason=why)
        self._touch(room)  # its sender cancels its call and waits for the room's end
        if room.tap.ended:
            self._close_record(room, "finished")

    def _close_record(self, room: Room, why: str) -> None:
        """A room this engine does not replay has ended: its spool is complete, for its sender to store."""
        f = self.spools.get(room.key)
        if f is not None:
            try:
                f.flush()
            except OSError as err:
                raise StateError(f"the state directory {self.s.state} cannot be written: {err}") from None
        with room.lock:
            room.closed = True
            room.ended_why = why
        self._touch(room)

    def _check(self, room: Room, check: ServerCheck) -> None:
        """FreeKill's verdict on a reply, made in the server by the tap: a refusal is printed at once (once: a
        restart's spool read again prints none it printed), judged by FreeKill's rules, beside this engine's."""
        if not check.refused or check.seq <= room.checks_printed:
            return
        room.checks_printed = check.seq
        seat = room.tap.seats.index(check.player) if check.player in room.tap.seats else None
        source = {"client": "client", "ai": "ai", "none": "default"}.get(check.by, "unspecified")
        self.metrics.server_refusals.labels(check.code, source).inc()
        lag = max(0.0, time.time() - _time_of(room, check.reply))
        who = f"player {check.player}" + (f" (seat {seat})" if seat is not None else "")
        self.out.emit("violation", f"room {room.room}: {who}, {check.code}: {check.request}: {check.why} "
                      f"[FreeKill's rules; {source} reply; record {check.reply}, {lag:.1f} s after its line]",
                      room=room.room, game=room.n, player=check.player, seat=seat, code=check.code,
                      message=f"{check.request}: {check.why}", source=source, record=check.reply,
                      judge="freekill", lag_s=round(lag, 3))
        self.state.save_printed(room.key, Printed(room.judged - 1, frozenset(room.printed), room.checks_printed))

    @staticmethod
    def _first(room: Room) -> str:
        return _sha(room.first_line) if room.first_line else ""

    def end_room(self, room: Room, why: str) -> None:
        """No more lines will come for the room: its stream ends with what it has (stored unfinished)."""
        if room.closed:
            return
        if room.not_replayed:
            self._close_record(room, why)
            self.out.emit("ended", f"room {room.room}: {why}: its record is stored unfinished", room=room.room,
                          game=room.n, reason=why)
            return
        if room.header is None:
            self.skip(room, f"{why} before its first round: nothing to verify")
            return
        try:
            tail = room.stream.finish()
        except Exception as err:  # (as _add's: the room cannot be read)
            self.skip(room, f"its record cannot be converted: {err}")
            return
        self._check_changed(room)
        with room.lock:
            room.events += tail
            room.written += [time.time()] * len(tail)
            room.closed = True
            room.ended_why = why
        self._touch(room)
        self.out.emit("ended", f"room {room.room}: {why}: its game is stored unfinished", room=room.room,
                      game=room.n, reason=why)

    def tick(self, now: float) -> None:
        for room in list(self.open.values()):
            if room.over:
                self._let_go(room)
            elif room.waiting_since is not None and now - room.waiting_since >= self.s.gap_wait:
                self.skip(room, f"record {room.tap.next_seq} is missing (lines were lost)")
            elif not room.closed and room.last_seen and now - room.last_seen >= self.s.room_timeout:
                self.end_room(room, f"silent for {self.s.room_timeout:g} s")
        self._wake_touched()

    def _let_go(self, room: Room) -> None:
        """A room over: its spool closed, and only what tells its lines from the next game's kept."""
        self.open.pop(room.key, None)
        f = self.spools.pop(room.key, None)
        if f is not None:
            f.close()
        self.touched.discard(room.key)
        if self.rooms.get(room.room) is room:
            del self.rooms[room.room]
            self.ended[room.room] = Ended(room.n, self._first(room))

    # -------------------------------------------------------------- streaming (on the live loop)

    def _touch(self, room: Room) -> None:
        """The room has something new for its sender (from any thread; woken at the end of the step)."""
        with self.woken_lock:
            self.woken.add(room)

    def _wake_touched(self) -> None:
        with self.woken_lock:
            rooms, self.woken = self.woken, set()
        if rooms:
            self.live.call_soon(_wake, rooms)

    def _start_sender(self, room: Room) -> None:
        self.live.spawn(self._send(room))

    async def _send(self, room: Room) -> None:
        room.wake = asyncio.Event()
        try:
            await self._stream(room)
            if room.not_replayed and not room.over:
                await self._store_record(room)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            try:
                if not isinstance(err, StateError):
                    # a fault of ours in one room's stream: that room is given up, the others go on
                    self.skip(room, f"its stream failed in the bridge ({type(err).__name__}: {err})")
                    return
            except StateError as state_err:
                err = state_err
            self.failure = err  # the state cannot be written: the bridge stops (run raises it)
            self.stopping.set()

    async def _until(self, room: Room, ready: Callable[[], bool]) -> bool:
        """Wait until ``ready()``; False if the room is over or the bridge stops first."""
        assert room.wake is not None
        while True:
            room.wake.clear()
            if room.over or self.stopping.is_set():
                return False
            if ready():
                return True
            await room.wake.wait()

    async def _stream(self, room: Room) -> None:
        delay = 0.5
        failing = False
        while not self.stopping.is_set():
            if not await self._until(room, lambda: room.header is not None or bool(room.not_replayed)):
                return
            if room.not_replayed:
                return
            assert room.header is not None
            metadata = Metadata(tournament=self.s.tournament, table=f"room {room.room}", round=f"game {room.n}",
                                submitter=self.s.submitter)
            call = self.live.open_call()
            writer = asyncio.create_task(self._write(room, call, header_request(room.header, metadata)))
            failure: ServiceError | None = None
            try:
                async for raw in call:
                    if failing:
                        failing = False
                        self.out.emit("service", f"room {room.room}: the service answers again; the room is "
                                      "streamed again from its start", room=room.room)
                    delay = 0.5
                    update = live_update(raw)
                    self._update(room, update, stopped_of(raw))
                    if update.finished is not None:
                        self._stored(room, update)
                        # (the call waited to its end: the service sees it close, not the cancel a call dropped with
                        # its answer unread would be)
                        with contextlib.suppress(Exception):
                            await asyncio.wait_for(call.code(), 10)
                        return
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if (task is not None and task.cancelling()) or self.stopping.is_set() or room.over:
                    raise
                if room.not_replayed:
                    return
                failure = ServiceError(grpc.StatusCode.CANCELLED, "the call was cancelled")
            except grpc.RpcError as err:
                failure = service_error(err)
            finally:
                writer.cancel()
                await asyncio.gather(writer, return_exceptions=True)
            if room.not_replayed:
                return  # (its call cancelled: the room is stored whole at its end)
            if failure is not None:
                if isinstance(failure, InvalidRequest):
                    self.not_replayed(room, f"the service refused its live stream: {failure.details}")
                    return
                if self.stopping.is_set() or room.over:
                    return
                if not failing:
                    self.out.emit("service", f"room {room.room}: the live stream failed ({failure.code.name}: "
                                  f"{failure.details}); retrying", room=room.room, error=failure.details)
                failing = True
            self.metrics.retries.inc()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.s.retry_max)

    async def _write(self, room: Room, call: Any, first: bytes) -> None:
        """The room's events to its call, as they come; the call closed when the room is (stored), cancelled
        when the room is given up or the bridge stops (a cancelled stream stores nothing)."""
        assert room.wake is not None
        try:
            await call.write(first)
            sent = 0
            while True:
                room.wake.clear()
                if room.over or self.stopping.is_set() or room.not_replayed:
                    call.cancel()  # (a cancelled stream stores nothing)
                    return
                with room.lock:
                    batch = room.events[sent:]
                    done = room.closed
                if batch:
                    await call.write(events_request(batch))
                    sent += len(batch)
                if done:
                    verdicts = self._server_verdicts(room)
                    if verdicts is not None:
                        await call.write(verdicts)
                    await call.done_writing()
                    return
                if not batch:
                    await room.wake.wait()
        except asyncio.CancelledError:
            raise
        except Exception:  # the call failed: its reader says how
            return

    @staticmethod
    def _server_verdicts(room: Room) -> bytes | None:
        """FreeKill's verdicts on the room's replies, for the service to keep beside ours (VerifyLiveRequest.server):
        sent with the last batch, when the event each reply became is known. None when the tap checked nothing."""
        with room.lock:
            if not room.tap.checks:
                return None
            events = dict(room.stream.reply_events)
            msg = spb.ServerVerdicts(
                judge=judge_of(room.tap),
                client_replies=[seq for seq, by in room.tap.replies.items() if by == "client"],
                reply_events=[spb.ReplyEvent(reply=r, event=e) for r, e in sorted(events.items())])
            msg.checks.extend(server_checks(room.tap, events))
        return spb.VerifyLiveRequest(server=msg).SerializeToString()

    async def _store_record(self, room: Room) -> None:
        """A room this engine does not replay, at its end: its spool (every tap line of the room) stored whole, as
        FreeKill's record with FreeKill's verdicts (UploadLog); retried while the service is away."""
        if not await self._until(room, lambda: room.closed):
            return
        path = self.state.spool(room.key)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as err:
            raise StateError(f"the state directory {self.s.state} cannot be read: {err}") from None
        metadata = Metadata(tournament=self.s.tournament, table=f"room {room.room}", round=f"game {room.n}",
                            submitter=self.s.submitter)
        delay = 0.5
        failing = False
        while not self.stopping.is_set() and not room.over:
            try:
                res = await self.live.upload_record(data, f"FreeKill room {room.room}, game {room.n}", metadata)
            except grpc.RpcError as err:
                failure = service_error(err)
                if isinstance(failure, InvalidRequest):
                    self.skip(room, f"the service refused its record: {failure.details}")
                    return
                if not failing:
                    self.out.emit("service", f"room {room.room}: storing its record failed ({failure.code.name}: "
                                  f"{failure.details}); retrying", room=room.room, error=failure.details)
                failing = True
                self.metrics.retries.inc()
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.s.retry_max)
                continue
            self._stored_record(room, res)
            return

    def _done(self, room: Room, replay: str, created: bool, violations: int, game_over: bool,
              coverage: dict[str, int], *, judged_by: str) -> None:
        """A room known stored: counted (its outcome, its client replies by who judged them), settled, and marked done
        in the state directory, never sent again."""
        outcome = "finished" if game_over else ("silent" if room.ended_why.startswith("silent") else "unfinished")
        self.metrics.rooms.labels(outcome).inc()
        for judge in JUDGED_BY:
            self.metrics.replies.labels(judge).inc(coverage[judge])
        if room.settle():
            self.metrics.rooms_open.dec()
        self.state.mark(room.key, "done", {"replay": replay, "created": created, "violations": violations,
                                           "outcome": outcome, "judged_by": judged_by, "first_line": self._first(room)})

    def _stored_record(self, room: Room, res: Any) -> None:
        info, cov = res.info, res.replay.coverage
        coverage = {"client_replies": cov.client_replies, "both": cov.judged_by_both,
                    "engine": cov.judged_by_engine_only, "freekill": cov.judged_by_server_only,
                    "neither": cov.judged_by_neither}
        self._done(room, info.id, res.created, info.violation_count, info.result.finished, coverage,
                   judged_by="freekill")
        stored = "stored" if res.created else "already stored"
        self.out.emit("stored", f"room {room.room}: game {'over' if info.result.finished else 'not over'}, "
                      f"{info.violation_count} client repl{'y' if info.violation_count == 1 else 'ies'} refused by "
                      f"FreeKill's rules (this engine does not replay it); {stored} as {info.id}", room=room.room,
                      game=room.n, replay=info.id, created=res.created, violations=info.violation_count,
                      game_over=info.result.finished, followed=False, judged_by="freekill", coverage=coverage)

    def _update(self, room: Room, update: LiveUpdate, stopped: Stopped | None) -> None:
        if room.not_replayed:
            return  # (an answer that crossed the cancel: the room's verdict is FreeKill's)
        printed = False
        if stopped is not None:
            self._stopped(room, stopped.at, stopped.reason)
        now = time.time()
        for ann in update.annotations:
            if room.stopped is None and not ann.derived and ann.status == apb.STATUS_NOT_CHECKED:
                # (a service that does not say why: its first event not checked says where)
                self._stopped(room, ann.index, "the service did not say why")
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
                if ann.index < room.judged - 1 or key in room.printed:
                    continue
                room.printed.add(key)
                self._violation(room, ann.index, ann.derived, v, lag)
                printed = True
        if printed:
            through = room.judged - 1
            room.printed = {key for key in room.printed if key[0] >= through}
            self.state.save_printed(room.key, Printed(through, frozenset(room.printed), room.checks_printed))

    def _stopped(self, room: Room, at: int, why: str) -> None:
        """The verifier stopped following the room's game: said at once, once; the room stays followed (what
        was judged before, and the game's end, are still stored)."""
        if room.stopped is not None:
            return
        room.stopped = Stopped(at, why)
        self.metrics.stopped.inc()
        self.out.emit("stopped", f"room {room.room}: the verifier stopped following game {room.n} at event {at}: "
                      f"{why}; its events from there are not checked", room=room.room, game=room.n, event=at,
                      reason=why)

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
        coverage = self._coverage(room)
        self._done(room, info.id, update.finished.created, info.violation_count, update.game_over, coverage,
                   judged_by="both")
        stored = "stored" if update.finished.created else "already stored"
        refused = sum(1 for c in room.tap.checks if c.refused and c.by == "client")
        self.out.emit("stored", f"room {room.room}: game {'over' if update.game_over else 'not over'}, "
                      f"{info.violation_count} violation(s)"
                      + (f", {refused} client repl{'y' if refused == 1 else 'ies'} refused by FreeKill's rules"
                         if refused else "") + f"; {stored} as {info.id}", room=room.room, game=room.n,
                      replay=info.id, created=update.finished.created, violations=info.violation_count,
                      game_over=update.game_over, followed=info.followed, judged_by="both", coverage=coverage)

    @staticmethod
    def _coverage(room: Room) -> dict[str, int]:
        """Which client replies of a room this engine replayed were judged, by which engine: by this one when the
        reply became an event it judged (before any stop), by FreeKill's rules when the tap's check gave ok or
        refused."""
        checked = room.stopped.at if room.stopped is not None else room.judged
        ours = {reply for reply, event in room.stream.reply_events.items() if event < checked}
        theirs = {c.reply for c in room.tap.checks if c.verdict in ("ok", "refused")}
        clients = [seq for seq, by in room.tap.replies.items() if by == "client"]
        out = {"client_replies": len(clients), "both": 0, "engine": 0, "freekill": 0, "neither": 0}
        for reply in clients:
            out["both" if reply in ours and reply in theirs else "engine" if reply in ours
                else "freekill" if reply in theirs else "neither"] += 1
        return out


def _time_of(room: Room, seq: int) -> float:
    return room.seq_time[seq - 1] if 0 < seq <= len(room.seq_time) else time.time()


def _wake(rooms: set[Room]) -> None:
    for room in rooms:
        if room.wake is not None:
            room.wake.set()


__all__ = ["DEFAULT_MAX_ROOMS", "Bridge", "BridgeMetrics", "Connection", "Output", "Room", "Settings", "StateError"]
