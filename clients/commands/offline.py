"""Offline commands: `check` (verify log files) and `selfplay` (generate games)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from clients.commands.options import card_packages, positive_int
from importers import ENGINES, RecordError, importer_of_all
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import LogFormatError, load_log, text, verify
from verifier.logio import MAX_LOG_BYTES, MAX_LOG_EVENTS, MAX_RECORD_BYTES, read_file
from verifier.state import violations_by_source
from verifier.text import SIDE, card, origin

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_UNREADABLE = 0, 1, 2


def register(sub: Any) -> None:
    check = sub.add_parser("check", help="verify log files offline and report every violation",
                           description="Verify game logs (binary protobuf or JSON). Exit status: 0 all clean, "
                           "1 violations found, 2 a file could not be read (or has more events than "
                           "--max-events; it is not verified).")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE", help="log files (binary protobuf or JSON; "
                       "with --from, the other engine's records)")
    check.add_argument("--max-events", type=positive_int, default=MAX_LOG_EVENTS, metavar="N",
                       help=f"most events in one log (default {MAX_LOG_EVENTS}, the service's default); "
                       "a longer log is reported unreadable and not verified")
    check.add_argument("--from", dest="source", choices=["sgs-verify", *ENGINES], default="sgs-verify",
                       help="the files are another engine's records (FreeKill transcripts or .fk.rep), imported "
                       "on the fly (`sgs-verify import` writes the logs)")
    check.add_argument("--json", action="store_true", help="one JSON object per file, for machines")
    check.add_argument("--quiet", "-q", action="store_true", help="only the summary line")
    check.set_defaults(run=run_check)

    sp = sub.add_parser("selfplay", help="bots play complete games and write their logs",
                        description="Play games with random legal bots; every outcome is recorded.")
    sp.add_argument("--games", type=int, default=10, help="how many games to play and write (default 10)")
    sp.add_argument("--players", type=int, default=8, help="4 to 10")
    sp.add_argument("--seed", type=int, default=0, help="game i uses seed SEED+i")
    sp.add_argument("--out", type=Path, required=True, help="folder for the logs")
    sp.add_argument("--format", choices=["binary", "json"], default="binary",
                    help="binary protobuf (.pb, default) or its JSON mapping (.json)")
    sp.add_argument("--two-spies", action="store_true", help="the 6/8-player two-spy role table")
    sp.add_argument("--generals", action="store_true", help="play with the 25 standard generals (bots pick "
                    "generals and use their skills) instead of white generals")
    sp.add_argument("--rebirth", action="store_true", help="the rebirth variant (转世, options.rebirth; implies "
                    "--generals): bots sacrifice hand cards to the dead, who are reborn")
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


def read_logs(path: Path, max_events: int, source: str = "sgs-verify") -> list[tuple[str, pb.GameLog | LogFormatError]]:
    """Load one log file, or import another engine's records from it (a FreeKill client database
    holds several): each as (where, the log or why it is unreadable or too long). Raises OSError, or
    LogFormatError when the file as a whole is unreadable."""
    data = read_file(path, MAX_LOG_BYTES if source == "sgs-verify" else MAX_RECORD_BYTES)
    if source == "sgs-verify":
        entries: list[tuple[str, pb.GameLog | LogFormatError]] = [(str(path), load_log(data))]
    else:
        try:
            records = importer_of_all(source)(data, path.name)
        except RecordError as err:
            raise LogFormatError(f"cannot import it from {source}: {err}") from None
        entries = [(f"{path} [{r.name}]" if r.part else str(path),
                    r.log if r.log is not None else LogFormatError(f"cannot import it from {source}: {r.error}"))
                   for r in records]
    out: list[tuple[str, pb.GameLog | LogFormatError]] = []
    for where, log in entries:
        if isinstance(log, pb.GameLog) and len(log.events) > max_events:
            log = LogFormatError(f"the log has {len(log.events)} events; the limit is {max_events} per log "
                                 "(--max-events N raises it); not verified")
        out.append((where, log))
    return out


def report_one(args: argparse.Namespace, path: str, log: pb.GameLog,
               reports: list[dict[str, Any]]) -> apb.AnnotatedReplay:
    """Verify one log and report it (a line per finding, or a JSON object into ``reports``)."""
    replay = verify(log)
    if args.json:
        body = json_format.MessageToDict(replay, preserving_proto_field_name=True)
        body.pop("annotations", None)
        if log.header.HasField("origin"):
            body["origin"] = json_format.MessageToDict(log.header.origin, preserving_proto_field_name=True)
        body["violations"] = [
            {"index": a.index, "derived": a.derived,
             **({"source": text.SOURCE_KEY.get(a.source, str(a.source))} if a.source else {}),
             **json_format.MessageToDict(v, preserving_proto_field_name=True)}
            for a in replay.annotations for v in a.violations]
        reports.append({"file": path, "readable": True, **body})
        return replay
    if not args.quiet:
        if log.header.HasField("origin"):
            print(f"{path}: origin: {origin(log.header.origin)}")
        for n in replay.header_notices:
            print(f"{path}: header notice (not a violation): {n.code}: {n.message}")
        for v in replay.header_violations:
            print(f"{path}: header: {v.code}: {v.message}")
        for ann in replay.annotations:
            for v in ann.violations:
                print(violation_line(path, ann, v))
        if not replay.followed:
            print(f"{path}: stopped following the log at event {replay.stopped_at}: {replay.stopped_reason}")
        res = replay.result
        outcome = (f"{SIDE.get(res.side, '?')} win, seats {list(res.winners)}" if res.finished
                   else f"unfinished: {res.reason}")
        if res.finished and res.side == pb.SIDE_KINGDOM:
            outcome = f"seats {list(res.winners)} win ({res.reason})"
        print(f"{path}: {len(log.events)} events, {replay.violation_count} violation(s); {outcome}")
        by_source = violations_by_source(replay)
        if by_source:
            print(f"{path}: who decided: {by_source}")
    return replay


def run_check(args: argparse.Namespace) -> int:
    unreadable = violations = events = stopped = checked = 0
    started = time.perf_counter()
    reports = []
    for path in args.files:
        try:
            entries = read_logs(path, args.max_events, args.source)
        except (OSError, LogFormatError) as err:
            entries = [(str(path), LogFormatError(err.strerror or str(err)) if isinstance(err, OSError) else err)]
        for where, got in entries:
            checked += 1
            if isinstance(got, LogFormatError):
                unreadable += 1
                if args.json:
                    reports.append({"file": where, "readable": False, "error": str(got)})
                else:
                    print(f"{where}: unreadable: {got}", file=sys.stderr)
                continue
            replay = report_one(args, where, got, reports)
            events += len(got.events)
            violations += replay.violation_count
            stopped += not replay.followed
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(reports, ensure_ascii=False, indent=1))
    else:
        rate = f", {events / seconds:,.0f} events/s" if seconds > 0 and events else ""
        readable = checked - unreadable
        record_count = f" ({checked} records)" if checked != len(args.files) else ""
        print(f"checked {len(args.files)} file(s){record_count}: {readable} readable, {unreadable} unreadable, "
              f"{violations} violation(s), {events} events{rate}; followed to the end: {readable - stopped}, "
              f"stopped: {stopped}")
    if unreadable:
        return EXIT_UNREADABLE
    return EXIT_VIOLATIONS if violations else EXIT_CLEAN


def run_selfplay(args: argparse.Namespace) -> int:
    from clients.selfplay import play_game

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
    rebirths = 0
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(args.games):
        seed = args.seed + i
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
        rebirths += reborn
        print(f"{stem.name}: {len(log.events)} events, {side} win" + (f", {reborn} rebirth(s)" if args.rebirth else ""))
    print(f"wrote {args.games} game(s) to {args.out}" + (f"; {rebirths} rebirth(s) in them" if args.rebirth else ""))
    return 0
