"""`cheats`: would this catch a cheating client? Plays self-play games, injects every known
kind of cheat where the game offers a place for it (clients/mutator.py), verifies every
altered copy and every unaltered game, and prints the detection table.

With ``--consistent`` it measures consistent cheats instead (clients/cheating_selfplay.py): games
in which a bot makes one illegal decision the engine still applies and the game goes on from it,
so that the only violation verification may report is the cheat, at its event."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self, TypeVar

from clients.cheating_selfplay import (
    CONSISTENT_KINDS,
    TAKE_PERCENT,
    ConsistentKind,
    play_cheating_game,
)
from clients.cheating_selfplay import judge as judge_consistent
from clients.commands.options import card_packages
from clients.mutator import HEGEMONY, IDENTITY, KINDS, CheatKind, Mutation, find_mutations
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

    def add(self, other: Self) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


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
               log: pb.GameLog | None = None, packages: Sequence[str] = (), generals: bool = False,
               mode: str = IDENTITY) -> GameResult:
    """One game: verify it unaltered, then every mutation of it. ``packages``: the header's card packages
    for the self-play game (("maneuvering",): the 160-card deck); ``generals``: played with the standard
    generals and their skills; ``mode``: "hegemony" for a 国战 game (then only the kinds of that mode)."""
    from clients.selfplay import play_game

    kinds = select_kinds(kind_names, mode)
    if log is None:
        log = play_game(seed, players, packages=packages, generals=generals,
                        mode=pb.MODE_HEGEMONY if mode == HEGEMONY else pb.MODE_IDENTITY)
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


def _check(args: tuple[int, int, tuple[str, ...] | None, int, tuple[str, ...], bool, str]) -> GameResult:
    seed, players, names, per_kind, packages, generals, mode = args
    return check_game(seed, players, names, per_kind, packages=packages, generals=generals, mode=mode)


K = TypeVar("K", CheatKind, ConsistentKind)


def select_named(kinds: Sequence[K], names: Sequence[str] | None, what: str) -> list[K]:
    """The kinds named (all of them when none are), in the order named."""
    if not names:
        return list(kinds)
    by_name = {k.name: k for k in kinds}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown {what} kind(s): {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def select_kinds(names: Sequence[str] | None, mode: str = IDENTITY) -> list[CheatKind]:
    """The kinds named (default: all) among those that apply to games of ``mode``."""
    return select_named([k for k in KINDS if mode in k.modes], names, "cheat")


def select_consistent(names: Sequence[str] | None) -> list[ConsistentKind]:
    return select_named(CONSISTENT_KINDS, names, "consistent cheat")


def run_report(games: int, players: Sequence[int], seed: int, kind_names: Sequence[str] | None = None,
               per_kind: int = 3, jobs: int = 1, packages: Sequence[str] = (), generals: bool = False,
               mode: str = IDENTITY) -> Report:
    """Games seed, seed+1, ... for each player count; every applicable cheat in each (``generals``: games
    with the standard generals; ``mode`` "hegemony": 国战 games and the kinds that apply to them)."""
    kinds = select_kinds(kind_names, mode)
    names = tuple(k.name for k in kinds) if kind_names else None
    work = [(seed + i, p, names, per_kind, tuple(packages), generals, mode) for p in players for i in range(games)]
    report = Report(kinds, tallies={k.name: Tally() for k in kinds})
    for r in each_game(_check, work, jobs, chunksize=4):
        report.add(r)
    return report


A = TypeVar("A")
R = TypeVar("R")


def each_game(check: Callable[[A], R], work: list[A], jobs: int, chunksize: int) -> Iterator[R]:
    """``check`` over ``work`` in order: in this process, or in ``jobs`` worker processes."""
    if jobs <= 1:
        yield from map(check, work)
        return
    with ProcessPoolExecutor(jobs) as pool:
        yield from pool.map(check, work, chunksize=chunksize)


# ---------------------------------------------------------------------------- consistent cheats

@dataclass(slots=True)
class ConsistentTally(Tally):
    """injected: games in which the game offered a place and the bot cheated; caught: the right code on
    the cheat's event."""

    played: int = 0  # games played with a bot out to cheat this way
    collateral: int = 0  # violations reported anywhere else in those logs (must be 0)


@dataclass(slots=True)
class ConsistentFailure:
    """A consistent cheat not caught right, or reported with collateral violations."""

    seed: int
    players: int
    kind: str
    code: str
    index: int
    derived: bool
    note: str
    verdict: str
    collateral: list[str]  # "index[d]:code" of the first other violations reported


@dataclass(slots=True)
class ConsistentResult:
    events: int
    tallies: dict[str, ConsistentTally]
    failures: list[ConsistentFailure]


@dataclass(slots=True)
class ConsistentReport:
    kinds: list[ConsistentKind]
    unplayable: dict[str, list[str]] = field(default_factory=dict)  # kind -> the card packages it needs
    games: int = 0
    events: int = 0
    tallies: dict[str, ConsistentTally] = field(default_factory=dict)
    failures: list[ConsistentFailure] = field(default_factory=list)

    def add(self, r: ConsistentResult) -> None:
        for name, t in r.tallies.items():
            self.games += t.played
            self.tallies.setdefault(name, ConsistentTally()).add(t)
        self.events += r.events
        self.failures.extend(r.failures)

    @property
    def ok(self) -> bool:
        """Every injected cheat caught with its code at its event, and nothing else reported."""
        return all(t.caught == t.injected and not t.collateral for t in self.tallies.values())


def consistent_kinds(names: Sequence[str] | None, packages: Sequence[str]
                     ) -> tuple[list[ConsistentKind], dict[str, list[str]]]:
    """The kinds asked for, and of them those the games' card packages offer no place for (with what they need)."""
    kinds = select_consistent(names)
    unplayable = {k.name: [p for p in k.packages if p not in packages] for k in kinds}
    return kinds, {name: need for name, need in unplayable.items() if need}


def check_consistent(seed: int, players: int, kind_names: Sequence[str] | None = None, packages: Sequence[str] = (),
                     generals: bool = False, percent: int = TAKE_PERCENT) -> ConsistentResult:
    """For every kind the games can offer a place for: the game of ``seed`` with one bot cheating that way,
    verified and judged."""
    kinds, unplayable = consistent_kinds(kind_names, packages)
    tallies = {k.name: ConsistentTally() for k in kinds if k.name not in unplayable}
    failures: list[ConsistentFailure] = []
    events = 0
    for k in kinds:
        if k.name in unplayable:
            continue
        game = play_cheating_game(seed, players, k, packages, generals, percent)
        t = tallies[k.name]
        t.played += 1
        events += len(game.log.events)
        if game.index is None:
            continue
        t.injected += 1
        j = judge_consistent(game, verify(game.log))
        if j.verdict == CAUGHT:
            t.caught += 1
        elif j.verdict == OTHER_CODE:
            t.other_code += 1
        else:
            t.missed += 1
        t.collateral += len(j.collateral)
        if j.verdict != CAUGHT or j.collateral:
            failures.append(ConsistentFailure(seed, players, k.name, k.code, game.index, game.derived, game.note,
                                              j.verdict, j.collateral[:8]))
    return ConsistentResult(events, tallies, failures)


def _check_consistent(args: tuple[int, int, tuple[str, ...] | None, tuple[str, ...], bool]) -> ConsistentResult:
    seed, players, names, packages, generals = args
    return check_consistent(seed, players, names, packages, generals)


def run_consistent(games: int, players: Sequence[int], seed: int, kind_names: Sequence[str] | None = None,
                   jobs: int = 1, packages: Sequence[str] = (), generals: bool = False) -> ConsistentReport:
    """Games seed, seed+1, ... for each player count, each played once per kind with a bot out to cheat
    that way."""
    kinds, unplayable = consistent_kinds(kind_names, packages)
    names = tuple(kind_names) if kind_names else None
    work = [(seed + i, p, names, tuple(packages), generals) for p in players for i in range(games)]
    report = ConsistentReport(kinds, unplayable, tallies={k.name: ConsistentTally() for k in kinds
                                                          if k.name not in unplayable})
    for r in each_game(_check_consistent, work, jobs, chunksize=2):
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
    p.add_argument("--mode", choices=[IDENTITY, HEGEMONY], default=IDENTITY,
                   help="identity (default) or hegemony: 国战 games, with the hegemony kinds and the identity kinds "
                   "that apply to them (not with --consistent, --packages or --generals)")
    p.add_argument("--consistent", action="store_true",
                   help="measure consistent cheats instead: each game is played once per kind with one bot making "
                   "one illegal decision the engine still applies (a second 杀, a 杀 out of range, 桃 at full HP, a "
                   "too-short discard, ...) and the game going on from it; every cheat must be caught with its code "
                   "at its event and nothing else reported (collateral). Exit status 1 otherwise. --per-game does "
                   "not apply")
    p.add_argument("--json", action="store_true", help="a JSON report instead of the table")
    p.add_argument("--list", action="store_true", help="list the cheat kinds (with --consistent: the consistent "
                   "ones) and exit")
    p.set_defaults(run=run_cheats)


def run_cheats(args: argparse.Namespace) -> int:
    if args.list:
        for k in CONSISTENT_KINDS if args.consistent else select_kinds(None, args.mode):
            print(f"{k.name:26} {k.code:24} {k.summary}")
        return 0
    if args.mode == HEGEMONY and (args.consistent or args.packages or args.generals):
        print("--mode hegemony has its own deck and generals, and no consistent cheats yet: no --consistent, "
              "--packages or --generals", file=sys.stderr)
        return 2
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
        select_consistent(names) if args.consistent else select_kinds(names, args.mode)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    packages = args.packages
    started = time.perf_counter()
    if args.consistent:
        consistent = run_consistent(args.games, players, args.seed, names, max(1, args.jobs), packages,
                                    args.generals)
        seconds = time.perf_counter() - started
        if args.json:
            print(json.dumps(consistent_json(consistent, args, seconds), ensure_ascii=False, indent=1))
        else:
            print_consistent(consistent, args, players, seconds)
        return 0 if consistent.ok else 1
    report = run_report(args.games, players, args.seed, names, args.per_game, max(1, args.jobs), packages,
                        args.generals, args.mode)
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


TALLY_HEAD = (f"{'cheat kind':26} {'must be caught as':24} {'injected':>8} {'caught':>8} {'other code':>10} "
              f"{'missed':>7}")


def tally_row(kind: str, code: str, t: Tally) -> str:
    return f"{kind:26} {code:24} {t.injected:>8} {t.caught:>8} {t.other_code:>10} {t.missed:>7}"


def run_scope(args: argparse.Namespace, players: list[int]) -> str:
    """How many games of how many players, with which cards and generals, from which seeds."""
    deck = " with " + ",".join(args.packages) if args.packages else ""
    deck += " with generals" if args.generals else ""
    deck += " in hegemony mode" if getattr(args, "mode", IDENTITY) == HEGEMONY else ""
    return (f"{args.games} game(s) × {','.join(map(str, players))} players{deck}, seeds "
            f"{args.seed}..{args.seed + args.games - 1}")


def print_table(report: Report, args: argparse.Namespace, players: list[int], seconds: float) -> None:
    print(f"cheat detection: {run_scope(args, players)}, up to {args.per_game} place(s) per kind per game")
    print()
    head = TALLY_HEAD
    print(head)
    print("-" * len(head))
    total = Tally()
    for k in report.kinds:
        t = report.tallies[k.name]
        total.add(t)
        note = "   (no place in these games)" if not t.injected else ""
        print(tally_row(k.name, k.code, t) + note)
    print("-" * len(head))
    print(tally_row("all kinds", "", total))
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


def consistent_json(report: ConsistentReport, args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    return {
        "consistent": True, "games": report.games, "players": args.players, "seed": args.seed,
        "generals": args.generals, "packages": list(args.packages), "events": report.events,
        "seconds": round(seconds, 2),
        "kinds": [{"kind": k.name, "code": k.code, "summary": k.summary,
                   **({"needs_packages": report.unplayable[k.name]} if k.name in report.unplayable
                      else asdict(report.tallies[k.name]))} for k in report.kinds],
        "failures": [asdict(f) for f in report.failures],
        "ok": report.ok,
    }


def print_consistent(report: ConsistentReport, args: argparse.Namespace, players: list[int], seconds: float) -> None:
    print(f"consistent cheats: {run_scope(args, players)}, each played once per kind with one bot cheating once; "
          "the game goes on from the cheat")
    print()
    head = f"{TALLY_HEAD} {'collateral':>10}"
    print(head)
    print("-" * len(head))
    total = ConsistentTally()
    for k in report.kinds:
        if k.name in report.unplayable:
            print(f"{k.name:26} {k.code:24} {'':>8}   (needs --packages {','.join(report.unplayable[k.name])})")
            continue
        t = report.tallies[k.name]
        total.add(t)
        note = "   (no place in these games)" if not t.injected else ""
        print(f"{tally_row(k.name, k.code, t)} {t.collateral:>10}{note}")
    print("-" * len(head))
    print(f"{tally_row('all kinds', '', total)} {total.collateral:>10}")
    print()
    print(f"games: {report.games} played ({report.events:,} events), {total.injected} with a cheat in them")
    for f in report.failures[:30]:
        where = f"the event derived before event {f.index}" if f.derived else f"event {f.index}"
        print(f"  {f.verdict}: {f.kind} (seed {f.seed}, {f.players} players) at {where} — {f.note}; expected "
              f"{f.code}; collateral: {', '.join(f.collateral) or 'none'}")
    if len(report.failures) > 30:
        print(f"  … and {len(report.failures) - 30} more")
    print(f"{'OK' if report.ok else 'FAILED'}: {total.caught} of {total.injected} caught at their event, "
          f"{total.other_code} other code, {total.missed} missed, {total.collateral} collateral violation(s) "
          f"({seconds:.1f} s)")
