"""`cheats`: would this catch a cheating client? Plays self-play games, injects every known
kind of cheat where the game offers a place for it (clients/mutator.py), verifies every
altered copy and every unaltered game, and prints the detection table."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from clients.commands.options import card_packages
from clients.mutator import KINDS, CheatKind, Mutation, find_mutations
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

CAUGHT, OTHER_CODE, MISSED = "caught", "other_code", "missed"


@dataclass(slots=True)
class Tally:
    injected: int = 0
    caught: int = 0  # the right code on the right event
    other_code: int = 0  # flagged, but not with the right code at the right event
    missed: int = 0  # nothing flagged at all

    def add(self, other: Tally) -> None:
        self.injected += other.injected
        self.caught += other.caught
        self.other_code += other.other_code
        self.missed += other.missed


@dataclass(slots=True)
class Failure:
    """A mutation that was not caught right, with what verification said instead."""

    seed: int
    players: int
    kind: str
    code: str
    index: int
    note: str
    verdict: str
    reported: list[str]  # "index:code" of the first violations reported


@dataclass(slots=True)
class GameResult:
    seed: int
    players: int
    events: int
    clean_codes: list[str]  # violation codes on the unaltered game (must be empty)
    tallies: dict[str, Tally]
    failures: list[Failure]


@dataclass(slots=True)
class Report:
    kinds: list[CheatKind]
    games: int = 0
    events: int = 0
    tallies: dict[str, Tally] = field(default_factory=dict)
    false_positives: list[tuple[int, int, list[str]]] = field(default_factory=list)  # (seed, players, codes)
    failures: list[Failure] = field(default_factory=list)

    def add(self, g: GameResult) -> None:
        self.games += 1
        self.events += g.events
        if g.clean_codes:
            self.false_positives.append((g.seed, g.players, g.clean_codes))
        for name, t in g.tallies.items():
            self.tallies.setdefault(name, Tally()).add(t)
        self.failures.extend(g.failures)

    @property
    def missed(self) -> int:
        return sum(t.missed for t in self.tallies.values())

    @property
    def ok(self) -> bool:
        return self.missed == 0 and not self.false_positives


def judge(m: Mutation, replay: apb.AnnotatedReplay) -> str:
    if m.caught(replay):
        return CAUGHT
    if replay.violation_count or not replay.followed:
        return OTHER_CODE
    return MISSED


def check_game(seed: int, players: int, kind_names: Sequence[str] | None = None, per_kind: int = 3,
               log: pb.GameLog | None = None, packages: Sequence[str] = (), generals: bool = False) -> GameResult:
    """One game: verify it unaltered, then every mutation of it. ``packages``: the header's card packages
    for the self-play game (("maneuvering",): the 160-card deck); ``generals``: played with the standard
    generals and their skills."""
    from clients.selfplay import play_game

    kinds = select_kinds(kind_names)
    if log is None:
        log = play_game(seed, players, packages=packages, generals=generals)
    clean = verify(log)
    clean_codes = list(clean.violation_codes) if clean.violation_count else []
    if not clean.followed:
        clean_codes.append("NOT_FOLLOWED")
    tallies = {k.name: Tally() for k in kinds}
    failures: list[Failure] = []
    if clean_codes:  # a flagged game says nothing about cheats injected into it
        return GameResult(seed, players, len(log.events), clean_codes, tallies, failures)
    for name, mutations in find_mutations(log, kinds, per_kind).items():
        t = tallies[name]
        for m in mutations:
            replay = verify(m.apply(log))
            verdict = judge(m, replay)
            t.injected += 1
            if verdict == CAUGHT:
                t.caught += 1
                continue
            if verdict == OTHER_CODE:
                t.other_code += 1
            else:
                t.missed += 1
            reported = [f"{a.index}{'d' if a.derived else ''}:{v.code}" for a in replay.annotations
                        for v in a.violations][:8]
            failures.append(Failure(seed, players, m.kind, m.code, m.index, m.note, verdict, reported))
    return GameResult(seed, players, len(log.events), [], tallies, failures)


def _check(args: tuple[int, int, tuple[str, ...] | None, int, tuple[str, ...], bool]) -> GameResult:
    seed, players, names, per_kind, packages, generals = args
    return check_game(seed, players, names, per_kind, packages=packages, generals=generals)


def select_kinds(names: Sequence[str] | None) -> list[CheatKind]:
    if not names:
        return list(KINDS)
    by_name = {k.name: k for k in KINDS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown cheat kind(s): {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def run_report(games: int, players: Sequence[int], seed: int, kind_names: Sequence[str] | None = None,
               per_kind: int = 3, jobs: int = 1, packages: Sequence[str] = (), generals: bool = False) -> Report:
    """Games seed, seed+1, ... for each player count; every applicable cheat in each (``generals``: games
    with the standard generals)."""
    kinds = select_kinds(kind_names)
    names = tuple(k.name for k in kinds) if kind_names else None
    work = [(seed + i, p, names, per_kind, tuple(packages), generals) for p in players for i in range(games)]
    report = Report(kinds, tallies={k.name: Tally() for k in kinds})
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for r in pool.map(_check, work, chunksize=4):
                report.add(r)
    else:
        for r in map(_check, work):
            report.add(r)
    return report


# ---------------------------------------------------------------------------- the command

def register(sub: Any) -> None:
    p = sub.add_parser("cheats", help="measure cheat detection on mutated self-play games",
                       description="Play self-play games, inject every known kind of cheat where the game "
                       "offers a place for it, verify every altered copy and the unaltered games, and print per "
                       "kind how many were injected, caught with the right code at the right event, caught with "
                       "another code, and missed; plus false positives on the unaltered games. Exit status 1 if "
                       "anything was missed or a clean game was flagged.")
    p.add_argument("--games", type=int, default=20, help="games per player count")
    p.add_argument("--players", default="8", help="player count(s), 4 to 10, comma-separated (e.g. 5,8)")
    p.add_argument("--seed", type=int, default=1, help="game i uses seed SEED+i")
    p.add_argument("--kinds", default="", help="comma-separated cheat kinds (default: all); see --list")
    p.add_argument("--per-game", type=int, default=3, metavar="N",
                   help="most places per kind per game, spread over the game (default 3)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--packages", type=card_packages, default=[],
                   help="extra card packages of the self-play games, comma-separated: maneuvering (军争, the 160-card "
                   "deck)")
    p.add_argument("--generals", action="store_true", help="play the games with the standard generals (their "
                   "skills; the skill-abuse kinds find places only there)")
    p.add_argument("--json", action="store_true", help="a JSON report instead of the table")
    p.add_argument("--list", action="store_true", help="list the cheat kinds and exit")
    p.set_defaults(run=run_cheats)


def run_cheats(args: argparse.Namespace) -> int:
    if args.list:
        for k in KINDS:
            print(f"{k.name:26} {k.code:24} {k.summary}")
        return 0
    try:
        players = [int(x) for x in args.players.split(",") if x.strip()]
    except ValueError:
        print("--players takes numbers, e.g. 8 or 5,8", file=sys.stderr)
        return 2
    if not players or any(not 4 <= n <= 10 for n in players) or args.games < 1 or args.per_game < 1:
        print("--players must be 4 to 10, --games and --per-game at least 1", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.kinds.split(",") if n.strip()]
    try:
        select_kinds(names)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    packages = args.packages
    started = time.perf_counter()
    report = run_report(args.games, players, args.seed, names, args.per_game, max(1, args.jobs), packages,
                        args.generals)
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(report_json(report, args, seconds), ensure_ascii=False, indent=1))
    else:
        print_table(report, args, players, seconds)
    return 0 if report.ok else 1


def report_json(report: Report, args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    return {
        "games": report.games, "players": args.players, "seed": args.seed, "per_game": args.per_game,
        "generals": args.generals, "events": report.events, "seconds": round(seconds, 2),
        "kinds": [{"kind": k.name, "code": k.code, "summary": k.summary, **asdict(report.tallies[k.name])}
                  for k in report.kinds],
        "false_positives": [{"seed": s, "players": p, "codes": c} for s, p, c in report.false_positives],
        "failures": [asdict(f) for f in report.failures],
        "ok": report.ok,
    }


def print_table(report: Report, args: argparse.Namespace, players: list[int], seconds: float) -> None:
    last = args.seed + args.games - 1
    deck = " with " + ",".join(args.packages) if args.packages else ""
    deck += " with generals" if args.generals else ""
    print(f"cheat detection: {args.games} game(s) × {','.join(map(str, players))} players{deck}, seeds "
          f"{args.seed}..{last}, up to {args.per_game} place(s) per kind per game")
    print()
    head = f"{'cheat kind':26} {'must be caught as':24} {'injected':>8} {'caught':>8} {'other code':>10} {'missed':>7}"
    print(head)
    print("-" * len(head))
    total = Tally()
    for k in report.kinds:
        t = report.tallies[k.name]
        total.add(t)
        note = "   (no place in these games)" if not t.injected else ""
        print(f"{k.name:26} {k.code:24} {t.injected:>8} {t.caught:>8} {t.other_code:>10} {t.missed:>7}{note}")
    print("-" * len(head))
    print(f"{'all kinds':26} {'':24} {total.injected:>8} {total.caught:>8} {total.other_code:>10} {total.missed:>7}")
    print()
    print(f"clean games: {report.games} verified ({report.events:,} events), "
          f"{len(report.false_positives)} flagged (false positives)")
    for seed, n, codes in report.false_positives[:20]:
        print(f"  false positive: seed {seed}, {n} players: {', '.join(codes)}")
    for f in report.failures[:30]:
        print(f"  {f.verdict}: {f.kind} (seed {f.seed}, {f.players} players) at event {f.index} — {f.note}; "
              f"expected {f.code}, reported {', '.join(f.reported) or 'nothing'}")
    if len(report.failures) > 30:
        print(f"  … and {len(report.failures) - 30} more")
    print(f"{'OK' if report.ok else 'FAILED'}: {total.missed} missed, {len(report.false_positives)} false positive(s) "
          f"({seconds:.1f} s)")
