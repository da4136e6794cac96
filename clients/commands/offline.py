"""Offline commands: `check` (verify log files) and `selfplay` (generate games)."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from clients import interrupts
from clients.commands.options import card_packages, positive_int, protected_seat_option
from clients.commands.records import format_hint
from clients.files import (
    LOG_SUFFIXES,
    RECORD_SUFFIXES,
    expand_folders,
    read_named_file,
)
from importers import ENGINES, RecordError, importer_of_all
from importers.freekill import sniff, unambiguous
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import LogFormatError, load_log, text, verify
from verifier.logio import MAX_LOG_BYTES, MAX_LOG_EVENTS, MAX_RECORD_BYTES
from verifier.state import violations_by_source
from verifier.text import SIDE, card, origin

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_UNREADABLE = 0, 1, 2
# `--from auto`: our logs, and other engines' records told by their content (clients/files.py).
AUTO = "auto"


def register(sub: Any) -> None:
    check = sub.add_parser("check", help="verify log files offline and report every violation",
                           description="Verify game logs (binary protobuf or JSON). Exit status: 0 all clean, "
                           "1 violations found, 2 a file could not be read (or has more events than "
                           "--max-events; it is not verified).")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE", help="log files (binary protobuf or JSON) or "
                       "FreeKill records, or folders of them (every .pb and .json under it; with --from freekill, "
                       "the records)")
    check.add_argument("--max-events", type=positive_int, default=MAX_LOG_EVENTS, metavar="N",
                       help=f"most events in one log (default {MAX_LOG_EVENTS}, the service's default); "
                       "a longer log is reported unreadable and not verified")
    check.add_argument("--from", dest="source", choices=[AUTO, "sgs-verify", *ENGINES], default=AUTO,
                       help="what the files are: auto (default: our logs, and FreeKill transcripts or .fk.rep told "
                       "by their content), sgs-verify (our logs only) or freekill; another engine's records are "
                       "imported on the fly (`sgs-verify import` writes the logs)")
    check.add_argument("--jobs", "-j", type=positive_int, default=1, metavar="N",
                       help="verify N files at once in N processes (default 1); the report keeps the files' order")
    check.add_argument("--json", action="store_true", help="one JSON object per file, for machines")
    check.add_argument("--quiet", "-q", action="store_true", help="only the summary line")
    check.set_defaults(run=run_check)

    sp = sub.add_parser("selfplay", help="bots play complete games and write their logs",
                        description="Play games with random legal bots; every outcome is recorded.")
    sp.add_argument("--games", type=int, default=10, help="how many games to play and write (default 10)")
    sp.add_argument("--players", type=int, default=8, help="4 to 10 (default 8)")
    sp.add_argument("--seed", type=int, default=0, help="game i uses seed SEED+i (default 0)")
    sp.add_argument("--out", type=Path, required=True, help="folder for the logs")
    sp.add_argument("--format", choices=["binary", "json"], default="binary",
                    help="binary protobuf (.pb, default) or its JSON mapping (.json)")
    sp.add_argument("--two-spies", action="store_true", help="the 6/8-player two-spy role table")
    sp.add_argument("--generals", action="store_true", help="play with the 25 standard generals (bots pick "
                    "generals and use their skills) instead of white generals")
    sp.add_argument("--rebirth", action="store_true", help="the rebirth variant (转世, options.rebirth; implies "
                    "--generals): bots sacrifice hand cards to the dead, who are reborn")
    sp.add_argument("--dark-souls", action="store_true", help="seed 003's dark souls (暗魂, options.dark_souls): "
                    "bots possess living characters with the souls of the dead and act with them")
    sp.add_argument("--last-three-clock", action="store_true", help="seed 003's last-three clock "
                    "(options.last_three_clock): from the fourth round after three are left, every round begins with "
                    "a drain of 1 HP from everyone")
    sp.add_argument("--protected-seat", type=protected_seat_option, default=None, metavar="N|seeded",
                    help="seed 003's first-out protection (options.protected_seat) of seat N, or of a seat drawn from "
                    "each game's seed (seeded); the bots hunt the protected character")
    sp.add_argument("--mode", choices=["identity", "hegemony"], default="identity",
                    help="identity (身份局, default) or hegemony (国战: its 108-card deck, the 60 generals, "
                    "bots that reveal them)")
    sp.add_argument("--packages", type=card_packages, default=[],
                    help="extra card packages, comma-separated: maneuvering (军争, the 160-card deck)")
    sp.set_defaults(run=run_selfplay)


def violation_line(path: str, ann: apb.Annotation, v: apb.Violation) -> str:
    where = "derived outcome before event" if ann.derived else "event"
    seat = f" seat {v.seat}" if v.HasField("seat") else ""
    crd = f" card {card(v.card)}" if v.HasField("card") else ""
    who = f" [{text.source(ann.source)}]" if ann.source else ""  # who made the decision, when the log says
    return f"{path}: {where} {ann.index}{seat}{crd}{who}: {v.code}: {v.message}"


Entry = tuple[str, "pb.GameLog | LogFormatError"]


def read_logs(path: Path, max_events: int, source: str = "sgs-verify") -> list[Entry]:
    """Load one log file, or import another engine's records from it (``source`` AUTO tells them apart by
    content; a FreeKill client database holds several): each as (where, the log or why it is unreadable or
    too long). Raises OSError, or LogFormatError when the file as a whole is unreadable (or is not a regular file:
    a FIFO is not opened, which would wait for a writer)."""
    if source == AUTO:
        data = read_named_file(path, max(MAX_LOG_BYTES, MAX_RECORD_BYTES))
        if unambiguous(data):
            entries = _imported(data, path, "freekill")
        else:
            if len(data) > MAX_LOG_BYTES:
                read_named_file(path, MAX_LOG_BYTES)  # raises the usual "larger than" error
            try:
                entries = [(str(path), load_log(data))]
            except LogFormatError:
                if sniff(data) is None:
                    raise
                entries = _imported(data, path, "freekill")
    elif source == "sgs-verify":
        entries = [(str(path), load_log(read_named_file(path, MAX_LOG_BYTES)))]
    else:
        entries = _imported(read_named_file(path, MAX_RECORD_BYTES), path, source)
    out: list[Entry] = []
    for where, log in entries:
        if isinstance(log, pb.GameLog) and len(log.events) > max_events:
            log = LogFormatError(f"the log has {len(log.events)} events; the limit is {max_events} per log "
                                 "(--max-events N raises it); not verified")
        out.append((where, log))
    return out


def _imported(data: bytes, path: Path, source: str) -> list[Entry]:
    try:
        records = importer_of_all(source)(data, path.name)
    except RecordError as err:
        raise LogFormatError(f"cannot import it from {source}: {err}") from None
    return [(f"{path} [{r.name}]" if r.part else str(path),
             r.log if r.log is not None else LogFormatError(f"cannot import it from {source}: {r.error}"))
            for r in records]


@dataclass(slots=True)
class FileReport:
    """One file checked: what to print (out on stdout, err on stderr) or its JSON report, and its counts."""

    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    readable: bool = True
    violations: int = 0
    events: int = 0
    followed: bool = True


def check_file(path: Path, max_events: int, source: str, as_json: bool, quiet: bool) -> list[FileReport]:
    """Read and verify one file (in this process or a --jobs worker): a report per record it holds."""
    try:
        entries = read_logs(path, max_events, source)
    except (OSError, LogFormatError) as err:
        msg = (err.strerror or str(err)) if isinstance(err, OSError) else str(err)
        entries = [(str(path), LogFormatError(msg + format_hint(path, source, err)))]
    return [check_one(where, got, as_json, quiet) for where, got in entries]


def check_one(where: str, got: pb.GameLog | LogFormatError, as_json: bool, quiet: bool) -> FileReport:
    """Verify one log (or report why it could not be read)."""
    out = FileReport()
    if isinstance(got, LogFormatError):
        out.readable = False
        if as_json:
            out.report = {"file": where, "readable": False, "error": str(got)}
        else:
            out.err.append(f"{where}: unreadable: {got}")
        return out
    log = got
    replay = verify(log)
    out.events = len(log.events)
    out.violations = replay.violation_count
    out.followed = replay.followed
    if as_json:
        body = json_format.MessageToDict(replay, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)
        body.pop("annotations", None)
        if log.header.HasField("origin"):
            body["origin"] = json_format.MessageToDict(log.header.origin, preserving_proto_field_name=True,
                                                       always_print_fields_with_no_presence=True)
        body["violations"] = [
            {"index": a.index, "derived": a.derived,
             **({"source": text.SOURCE_KEY.get(a.source, str(a.source))} if a.source else {}),
             **json_format.MessageToDict(v, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)}
            for a in replay.annotations for v in a.violations]
        out.report = {"file": where, "readable": True, **body}
        return out
    if quiet:
        return out
    lines = out.out
    if log.header.HasField("origin"):
        lines.append(f"{where}: origin: {origin(log.header.origin)}")
    for n in replay.header_notices:
        lines.append(f"{where}: header notice (not a violation): {n.code}: {n.message}")
    for v in replay.header_violations:
        lines.append(f"{where}: header: {v.code}: {v.message}")
    for ann in replay.annotations:
        for v in ann.violations:
            lines.append(violation_line(where, ann, v))
    if not replay.followed:
        lines.append(f"{where}: stopped following the log at event {replay.stopped_at}: {replay.stopped_reason}")
    res = replay.result
    outcome = (f"{SIDE.get(res.side, '?')} win, seats {list(res.winners)}" if res.finished
               else f"unfinished: {res.reason}")
    if res.finished and res.side == pb.SIDE_KINGDOM:
        outcome = f"seats {list(res.winners)} win ({res.reason})"
    lines.append(f"{where}: {len(log.events)} events, {replay.violation_count} violation(s); {outcome}")
    by_source = violations_by_source(replay)
    if by_source:
        lines.append(f"{where}: who decided: {by_source}")
    return out


def _checked(args: argparse.Namespace, files: list[Path]) -> Iterator[FileReport]:
    """Every file's report, in the files' order: here (the engine runs in this process, so Ctrl-C is taken
    between two files: clients/interrupts.py), or in --jobs worker processes."""
    check = functools.partial(check_file, max_events=args.max_events, source=args.source, as_json=args.json,
                              quiet=args.quiet)
    if args.jobs <= 1 or len(files) <= 1:
        with interrupts.deferred():
            for path in files:
                interrupts.raise_if_interrupted()
                yield from check(path)
        return
    pool = ProcessPoolExecutor(min(args.jobs, len(files)), initializer=interrupts.ignore_in_worker)
    try:
        for reports in pool.map(check, files, chunksize=1):
            yield from reports
    except BaseException:
        interrupts.stop_pool(pool)
        raise
    pool.shutdown()


def run_check(args: argparse.Namespace) -> int:
    unreadable = violations = events = stopped = 0
    started = time.perf_counter()
    files, empty = expand_folders(args.files, LOG_SUFFIXES if args.source == "sgs-verify" else
                                  RECORD_SUFFIXES if args.source in ENGINES else LOG_SUFFIXES + RECORD_SUFFIXES)
    reports: list[dict[str, Any]] = []
    checked = len(empty)
    for folder, why in empty:  # counted as unreadable, like a file that is not there
        unreadable += 1
        if args.json:
            reports.append({"file": str(folder), "readable": False, "error": why})
        else:
            print(f"{folder}: unreadable: {why}", file=sys.stderr)
    for result in _checked(args, files):
        for line in result.err:
            print(line, file=sys.stderr)
        for line in result.out:
            print(line)
        if result.report is not None:
            reports.append(result.report)
        checked += 1
        unreadable += not result.readable
        events += result.events
        violations += result.violations
        stopped += result.readable and not result.followed
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(reports, ensure_ascii=False, indent=1))
    else:
        rate = f", {events / seconds:,.0f} events/s" if seconds > 0 and events else ""
        readable = checked - unreadable
        records = f" ({checked} records)" if checked != len(files) + len(empty) else ""
        print(f"checked {len(files) + len(empty)} file(s){records}: {readable} readable, {unreadable} unreadable, "
              f"{violations} violation(s), {events} events{rate}; followed to the end: {readable - stopped}, "
              f"stopped: {stopped}")
    if unreadable:
        return EXIT_UNREADABLE
    return EXIT_VIOLATIONS if violations else EXIT_CLEAN


def run_selfplay(args: argparse.Namespace) -> int:
    if not 4 <= args.players <= 10:
        print("--players must be 4 to 10", file=sys.stderr)
        return 2
    packages = args.packages
    variant = pb.ROLE_VARIANT_TWO_SPIES if args.two_spies else pb.ROLE_VARIANT_STANDARD
    mode = pb.MODE_HEGEMONY if args.mode == "hegemony" else pb.MODE_IDENTITY
    if mode == pb.MODE_HEGEMONY and (packages or args.two_spies or args.generals or args.rebirth):
        print("--mode hegemony has its own deck and generals: no --packages, --two-spies, --generals or --rebirth",
              file=sys.stderr)
        return 2
    from clients.selfplay.tournament import HouseRules

    if args.dark_souls and (mode == pb.MODE_HEGEMONY or args.rebirth):
        print("--dark-souls is an identity-mode option and is not combined with --rebirth", file=sys.stderr)
        return 2
    house = HouseRules(args.last_three_clock, args.protected_seat)
    if house and (mode == pb.MODE_HEGEMONY or args.rebirth):
        print("--last-three-clock and --protected-seat are identity-mode house rules, never with --rebirth "
              "(docs/rules.md#house-rule-combinations)", file=sys.stderr)
        return 2
    if house and args.dark_souls:
        print("--dark-souls is played alone here: its self-play does not take --last-three-clock or --protected-seat",
              file=sys.stderr)
        return 2
    if house.protected_seat is not None and house.protected_seat >= args.players:
        print(f"--protected-seat {house.protected_seat} is not at a {args.players}-seat table", file=sys.stderr)
        return 2
    rebirths = 0
    args.out.mkdir(parents=True, exist_ok=True)
    with interrupts.deferred():  # Ctrl-C between two games, not inside the compiled engine (clients/interrupts.py)
        for i in range(args.games):
            interrupts.raise_if_interrupted()
            rebirths += _play_one(args, args.seed + i, variant, packages, mode)
    print(f"wrote {args.games} game(s) to {args.out}" + (f"; {rebirths} rebirth(s) in them" if args.rebirth else ""))
    return 0


def _play_one(args: argparse.Namespace, seed: int, variant: int, packages: list[str], mode: int) -> int:
    """Play and write one self-play game; its number of rebirths."""
    from clients.selfplay import dark_souls, play_game
    from clients.selfplay.tournament import HouseRules, drains, play_tournament_game

    house = HouseRules(args.last_three_clock, args.protected_seat)
    if args.dark_souls:
        log = dark_souls.play_game(seed, args.players, variant, packages, generals=args.generals)
    elif house:
        log = play_tournament_game(seed, args.players, house, variant, packages=packages, generals=args.generals)
    else:
        log = play_game(seed, args.players, variant, packages=packages, generals=args.generals, mode=mode,
                        rebirth=args.rebirth)
    stem = args.out / f"game-s{seed}-p{args.players}"
    if args.format == "json":
        stem.with_suffix(".json").write_text(json_format.MessageToJson(log, indent=1, ensure_ascii=False),
                                             encoding="utf-8")
    else:
        stem.with_suffix(".pb").write_bytes(log.SerializeToString(deterministic=True))
    winners = log.events[-1].game_over
    side = winners.kingdom or f"seat {list(winners.winners)}" if winners.side == pb.SIDE_KINGDOM \
        else SIDE.get(winners.side, '?')
    reborn = sum(1 for ev in log.events if ev.HasField("rebirth"))
    drained = f", {len(drains(log))} drain(s)" if house.last_three_clock else ""
    protected = f", seat {log.header.options.protected_seat} protected" if house.protected_seat is not None else ""
    print(f"{stem.name}: {len(log.events)} events, {side} win" + (f", {reborn} rebirth(s)" if args.rebirth else "")
          + drained + protected)
    return reborn
