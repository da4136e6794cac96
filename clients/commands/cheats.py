"""`cheats`: would this catch a cheating client? Plays self-play games, injects every known
kind of cheat where the game offers a place for it (clients/cheats/mutator.py), verifies every
altered copy and every unaltered game, and prints the detection table.

For complete-recording logs it also measures the collateral of each spliced cheat caught: the
violations besides it in its altered log, which goes on as the game without the cheat (a figure
for comparing verifiers, not a failure).

With ``--consistent`` it measures consistent cheats instead (clients/cheats/selfplay.py): games
in which a bot makes one illegal decision the engine still applies and the game goes on from it,
so that the only violation verification may report is the cheat, at its event; with
``--cheats-per-game K``, up to K bots do so, one in each of K spans of the game's turns."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self, TypeVar

from clients import interrupts
from clients.cheats.mutator import HEGEMONY, IDENTITY, KINDS, CheatKind, Mutation, find_mutations
from clients.cheats.selfplay import (
    CONSISTENT_KINDS,
    TAKE_PERCENT,
    ConsistentKind,
    honest_turns,
    judge_each,
    play_cheating_game,
)
from clients.commands.options import card_packages, protected_seat_option
from clients.progress import GameProgress
from clients.selfplay.tournament import SEEDED, HouseRules, play_tournament_game
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

CAUGHT, OTHER_CODE, MISSED = "caught", "other_code", "missed"
NO_HOUSE_RULES = HouseRules()


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
class Collateral:
    """What spliced cheats of one kind bring with them, on complete-recording logs: the altered log goes on
    as the game without the cheat, so a verifier that applies the cheat may flag later events too. Measured
    on the cheats caught right (the others are failures anyway); a figure to compare verifiers by, not a
    failure."""

    measured: int = 0  # caught cheats measured
    total: int = 0  # violations besides the caught one in their altered logs, all together
    most: int = 0  # the most in one altered log
    none: int = 0  # altered logs with nothing besides the caught violation
    stopped: int = 0  # altered logs the verifier could not follow to their end (their collateral is a floor)
    codes: dict[str, int] = field(default_factory=dict)  # the collateral by code

    def count(self, replay: apb.AnnotatedReplay, caught: Mutation) -> None:
        """One caught cheat's altered log, verified: every violation but the cheat's own (its code at its
        annotation; a removed penalty of hand and equipment is two such derived moves) is collateral."""
        self.measured += 1
        own = (caught.index, caught.edit.derived, caught.code)
        codes = [v.code for a in replay.annotations for v in a.violations if (a.index, a.derived, v.code) != own]
        codes += [hv.code for hv in replay.header_violations]
        self.total += len(codes)
        self.most = max(self.most, len(codes))
        self.none += not codes
        self.stopped += not replay.followed
        for code in codes:
            self.codes[code] = self.codes.get(code, 0) + 1

    def add(self, other: Self) -> None:
        self.measured += other.measured
        self.total += other.total
        self.most = max(self.most, other.most)
        self.none += other.none
        self.stopped += other.stopped
        for code, n in other.codes.items():
            self.codes[code] = self.codes.get(code, 0) + n

    @property
    def mean(self) -> float:
        return self.total / self.measured if self.measured else 0.0

    def as_json(self) -> dict[str, Any]:
        return {"measured": self.measured, "mean": round(self.mean, 3), "max": self.most, "total": self.total,
                "none": self.none, "not_followed": self.stopped,
                "codes": dict(sorted(self.codes.items(), key=lambda item: (-item[1], item[0])))}


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
    collateral: dict[str, Collateral] = field(default_factory=dict)  # of the caught cheats (complete logs)


@dataclass(slots=True)
class Report:
    kinds: list[CheatKind]
    games: int = 0
    events: int = 0
    tallies: dict[str, Tally] = field(default_factory=dict)
    false_positives: list[tuple[int, int, list[str]]] = field(default_factory=list)  # (seed, players, codes)
    failures: list[Failure] = field(default_factory=list)
    collateral: dict[str, Collateral] = field(default_factory=dict)

    def add(self, g: GameResult) -> None:
        self.games += 1
        self.events += g.events
        if g.clean_codes:
            self.false_positives.append((g.seed, g.players, g.clean_codes))
        for name, t in g.tallies.items():
            self.tallies.setdefault(name, Tally()).add(t)
        for name, c in g.collateral.items():
            self.collateral.setdefault(name, Collateral()).add(c)
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
               mode: str = IDENTITY, dark_souls: bool = False, house: HouseRules = NO_HOUSE_RULES) -> GameResult:
    """One game: verify it unaltered, then every mutation of it. ``packages``: the header's card packages
    for the self-play game (("maneuvering",): the 160-card deck); ``generals``: played with the standard
    generals and their skills; ``mode``: "hegemony" for a 国战 game (then only the kinds of that mode);
    ``dark_souls``: an identity game with seed 003's dark souls (its kinds find places only there); ``house``:
    an identity game with seed 003's last-three clock or first-out protection."""
    from clients.selfplay import dark_souls as dark_souls_selfplay
    from clients.selfplay import play_game

    kinds = select_kinds(kind_names, mode)
    if log is None and dark_souls:
        log = dark_souls_selfplay.play_game(seed, players, packages=packages, generals=generals)
    elif log is None and house:
        log = play_tournament_game(seed, players, house, packages=packages, generals=generals)
    elif log is None:
        log = play_game(seed, players, packages=packages, generals=generals,
                        mode=pb.MODE_HEGEMONY if mode == HEGEMONY else pb.MODE_IDENTITY)
    clean = verify(log)
    clean_codes = list(clean.violation_codes) if clean.violation_count else []
    if not clean.followed:
        clean_codes.append("NOT_FOLLOWED")
    tallies = {k.name: Tally() for k in kinds}
    failures: list[Failure] = []
    # Collateral is measured on complete-recording logs only: where outcomes are left out the verifier
    # derives them from its own game, so the rest of the log contradicts it less.
    complete = log.header.options.outcomes == pb.OUTCOME_RECORDING_COMPLETE
    collateral = {k.name: Collateral() for k in kinds} if complete else {}
    if clean_codes:  # a flagged game says nothing about cheats injected into it
        return GameResult(seed, players, len(log.events), clean_codes, tallies, failures, collateral)
    for name, mutations in find_mutations(log, kinds, per_kind).items():
        t = tallies[name]
        for m in mutations:
            replay = verify(m.apply(log))
            verdict = judge(m, replay)
            t.injected += 1
            if verdict == CAUGHT:
                t.caught += 1
                if complete:
                    collateral[name].count(replay, m)
                continue
            if verdict == OTHER_CODE:
                t.other_code += 1
            else:
                t.missed += 1
            reported = [f"{a.index}{'d' if a.derived else ''}:{v.code}" for a in replay.annotations
                        for v in a.violations][:8]
            failures.append(Failure(seed, players, m.kind, m.code, m.index, m.note, verdict, reported))
    return GameResult(seed, players, len(log.events), [], tallies, failures, collateral)


def _check(args: tuple[int, int, tuple[str, ...] | None, int, tuple[str, ...], bool, str, bool, HouseRules]
           ) -> GameResult:
    seed, players, names, per_kind, packages, generals, mode, dark_souls, house = args
    return check_game(seed, players, names, per_kind, packages=packages, generals=generals, mode=mode,
                      dark_souls=dark_souls, house=house)


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
               mode: str = IDENTITY, on_game: Callable[[], None] | None = None, dark_souls: bool = False,
               house: HouseRules = NO_HOUSE_RULES) -> Report:
    """Games seed, seed+1, ... for each player count; every applicable cheat in each (``generals``: games
    with the standard generals; ``mode`` "hegemony": 国战 games and the kinds that apply to them; ``dark_souls``:
    identity games with dark souls; ``house``: identity games with seed 003's clock or protection). ``on_game``
    is called as each game is done (progress)."""
    kinds = select_kinds(kind_names, mode)
    names = tuple(k.name for k in kinds) if kind_names else None
    work = [(seed + i, p, names, per_kind, tuple(packages), generals, mode, dark_souls, house) for p in players
            for i in range(games)]
    report = Report(kinds, tallies={k.name: Tally() for k in kinds})
    for r in each_game(_check, work, jobs, chunksize=4):
        report.add(r)
        if on_game is not None:
            on_game()
    return report


A = TypeVar("A")
R = TypeVar("R")


def each_game(check: Callable[[A], R], work: list[A], jobs: int, chunksize: int) -> Iterator[R]:
    """``check`` over ``work`` in order: in this process, or in ``jobs`` worker processes."""
    if jobs <= 1:
        # The engine runs here: Ctrl-C is taken between two games, never inside the compiled core, where
        # its runtime would abort with "fatal: out of memory" (clients/interrupts.py).
        with interrupts.deferred():
            for item in work:
                interrupts.raise_if_interrupted()
                yield check(item)
        return
    # forkserver: forking a process that runs threads (a client's gRPC ones) is unsafe. The workers ignore
    # SIGINT; on Ctrl-C (or any failure) this process cancels what is queued and ends them.
    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("forkserver"),
                               initializer=interrupts.ignore_in_worker)
    try:
        yield from pool.map(check, work, chunksize=chunksize)
    except BaseException:
        interrupts.stop_pool(pool)
        raise
    pool.shutdown()


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
    seed: int = 0
    players: int = 0
    placed: dict[str, int] = field(default_factory=dict)  # kind -> how many cheats its game of this seed got


@dataclass(slots=True)
class ConsistentReport:
    kinds: list[ConsistentKind]
    unplayable: dict[str, list[str]] = field(default_factory=dict)  # kind -> the card packages it needs
    games: int = 0
    events: int = 0
    tallies: dict[str, ConsistentTally] = field(default_factory=dict)
    failures: list[ConsistentFailure] = field(default_factory=list)
    cheats_per_game: int = 1  # K: the cheats each game is played for
    # kind -> games by how many of their K cheats were placed (0..K): a game may offer fewer places
    placed: dict[str, list[int]] = field(default_factory=dict)
    placed_per_game: list[tuple[int, int, dict[str, int]]] = field(default_factory=list)  # (seed, players, ...)

    def add(self, r: ConsistentResult) -> None:
        for name, t in r.tallies.items():
            self.games += t.played
            self.tallies.setdefault(name, ConsistentTally()).add(t)
        self.events += r.events
        self.failures.extend(r.failures)
        for name, n in r.placed.items():
            self.placed.setdefault(name, [0] * (self.cheats_per_game + 1))[n] += 1
        self.placed_per_game.append((r.seed, r.players, r.placed))

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
                     generals: bool = False, percent: int = TAKE_PERCENT, cheats: int = 1) -> ConsistentResult:
    """For every kind the games can offer a place for: the game of ``seed`` with one bot cheating that way
    (``cheats`` = K: up to K bots, one in each of K spans of the game's turns), verified and each cheat
    judged."""
    kinds, unplayable = consistent_kinds(kind_names, packages)
    playable = [k for k in kinds if k.name not in unplayable]
    tallies = {k.name: ConsistentTally() for k in playable}
    failures: list[ConsistentFailure] = []
    placed: dict[str, int] = {}
    events = 0
    # The spans are cut from the honest game of the seed, the same for every kind.
    turns = honest_turns(seed, players, packages, generals) if cheats > 1 and playable else None
    for k in playable:
        game = play_cheating_game(seed, players, k, packages, generals, percent, cheats, turns)
        t = tallies[k.name]
        t.played += 1
        events += len(game.log.events)
        placed[k.name] = len(game.cheats)
        if not game.cheats:
            continue
        t.injected += len(game.cheats)
        for c, j in zip(game.cheats, judge_each(game, verify(game.log)), strict=True):
            if j.verdict == CAUGHT:
                t.caught += 1
            elif j.verdict == OTHER_CODE:
                t.other_code += 1
            else:
                t.missed += 1
            t.collateral += len(j.collateral)
            if j.verdict != CAUGHT or j.collateral:
                failures.append(ConsistentFailure(seed, players, k.name, k.code, c.index, c.derived, c.note,
                                                  j.verdict, j.collateral[:8]))
    return ConsistentResult(events, tallies, failures, seed, players, placed)


def _check_consistent(args: tuple[int, int, tuple[str, ...] | None, tuple[str, ...], bool, int]) -> ConsistentResult:
    seed, players, names, packages, generals, cheats = args
    return check_consistent(seed, players, names, packages, generals, cheats=cheats)


def run_consistent(games: int, players: Sequence[int], seed: int, kind_names: Sequence[str] | None = None,
                   jobs: int = 1, packages: Sequence[str] = (), generals: bool = False, cheats: int = 1,
                   on_game: Callable[[], None] | None = None) -> ConsistentReport:
    """Games seed, seed+1, ... for each player count, each played once per kind with a bot out to cheat
    that way (``cheats`` = K: up to K bots, far apart)."""
    if cheats < 1:
        raise ValueError(f"cheats per game must be at least 1, got {cheats}")
    kinds, unplayable = consistent_kinds(kind_names, packages)
    names = tuple(kind_names) if kind_names else None
    work = [(seed + i, p, names, tuple(packages), generals, cheats) for p in players for i in range(games)]
    report = ConsistentReport(kinds, unplayable, tallies={k.name: ConsistentTally() for k in kinds
                                                          if k.name not in unplayable}, cheats_per_game=cheats)
    for r in each_game(_check_consistent, work, jobs, chunksize=2):
        report.add(r)
        if on_game is not None:
            on_game()
    return report


# ---------------------------------------------------------------------------- the command

def register(sub: Any) -> None:
    p = sub.add_parser("cheats", help="measure cheat detection on mutated self-play games",
                       description="Play self-play games, inject every known kind of cheat where the game "
                       "offers a place for it, verify every altered copy and the unaltered games, and print per "
                       "kind how many were injected, caught with the right code at the right event, caught with "
                       "another code, and missed, and the collateral of the caught ones (violations besides the "
                       "cheat in its altered complete-recording log: mean, max, none, not followed); plus false "
                       "positives on the unaltered games. Exit status 1 if anything was missed or a clean game was "
                       "flagged.")
    p.add_argument("--games", type=int, default=20, help="games per player count (default 20)")
    p.add_argument("--players", default="8", help="player count(s), 4 to 10, comma-separated (e.g. 5,8; default 8)")
    p.add_argument("--seed", type=int, default=1, help="game i uses seed SEED+i (default 1)")
    p.add_argument("--kinds", default="", help="comma-separated cheat kinds (default: all); see --list")
    p.add_argument("--per-game", type=int, default=3, metavar="N",
                   help="most places per kind per game, spread over the game (default 3)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--packages", type=card_packages, default=[],
                   help="extra card packages of the self-play games, comma-separated: maneuvering (军争, the 160-card "
                   "deck)")
    p.add_argument("--generals", action="store_true", help="play the games with the standard generals (their "
                   "skills; the skill-abuse kinds find places only there)")
    p.add_argument("--dark-souls", action="store_true", help="play identity games with seed 003's dark souls "
                   "(暗魂, options.dark_souls; its kinds find places only there; not with --consistent)")
    p.add_argument("--mode", choices=[IDENTITY, HEGEMONY], default=IDENTITY,
                   help="identity (default) or hegemony: 国战 games, with the hegemony kinds and the identity kinds "
                   "that apply to them (not with --consistent, --packages or --generals)")
    p.add_argument("--last-three-clock", action="store_true",
                   help="play identity games with seed 003's last-three clock (options.last_three_clock): the drain "
                   "kinds find places only there")
    p.add_argument("--protected-seat", type=protected_seat_option, default=None, metavar="N|seeded",
                   help="play identity games with seed 003's first-out protection of seat N (or a seat drawn from "
                   "each game's seed: seeded): the protection kinds find places only there")
    p.add_argument("--consistent", action="store_true",
                   help="measure consistent cheats instead: each game is played once per kind with one bot making "
                   "one illegal decision the engine still applies (a second 杀, a 杀 out of range, 桃 at full HP, a "
                   "too-short discard, ...) and the game going on from it; every cheat must be caught with its code "
                   "at its event and nothing else reported (collateral). Exit status 1 otherwise. --per-game does "
                   "not apply")
    p.add_argument("--cheats-per-game", type=int, default=None, metavar="K",
                   help="with --consistent: up to K cheats in each game (default 1), by K different bots, far apart: "
                   "the honest game's turns are cut into K spans and each span gets at most one cheat, the first "
                   "place in it the seed's cheat stream takes for a seat that has not cheated yet. Each must be "
                   "caught at its own event with nothing else reported; the report also counts games by how many "
                   "of their K cheats were placed (a game may offer fewer places)")
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
    house = HouseRules(args.last_three_clock, args.protected_seat)
    if (args.dark_souls or house) and (args.mode == HEGEMONY or args.consistent):
        print("--dark-souls, --last-three-clock and --protected-seat are identity-mode house rules, with no "
              "consistent cheats yet: not with --mode hegemony or --consistent", file=sys.stderr)
        return 2
    if args.dark_souls and house:
        print("--dark-souls is played alone here: the self-play of dark souls does not take --last-three-clock or "
              "--protected-seat", file=sys.stderr)
        return 2
    try:
        players = [int(x) for x in args.players.split(",") if x.strip()]
    except ValueError:
        print("--players takes numbers, e.g. 8 or 5,8", file=sys.stderr)
        return 2
    if not players or any(not 4 <= n <= 10 for n in players) or args.games < 1 or args.per_game < 1:
        print("--players must be 4 to 10, --games and --per-game at least 1", file=sys.stderr)
        return 2
    if house.protected_seat is not None and house.protected_seat >= min(players):
        print(f"--protected-seat {house.protected_seat} is not at a {min(players)}-seat table", file=sys.stderr)
        return 2
    if args.cheats_per_game is not None and (args.cheats_per_game < 1 or not args.consistent):
        print("--cheats-per-game must be at least 1, and applies only with --consistent", file=sys.stderr)
        return 2
    cheats = args.cheats_per_game or 1
    names = [n.strip() for n in args.kinds.split(",") if n.strip()]
    try:
        select_consistent(names) if args.consistent else select_kinds(names, args.mode)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    packages = args.packages
    started = time.perf_counter()
    # Progress on stderr (a bar on a terminal, else a line per tenth): a run of many games is not silent.
    progress = GameProgress(args.games * len(players), "cheats")
    if args.consistent:
        try:
            consistent = run_consistent(args.games, players, args.seed, names, max(1, args.jobs), packages,
                                        args.generals, cheats, on_game=progress.advance)
        finally:
            progress.close()
        seconds = time.perf_counter() - started
        if args.json:
            print(json.dumps(consistent_json(consistent, args, seconds), ensure_ascii=False, indent=1))
        else:
            print_consistent(consistent, args, players, seconds)
        return 0 if consistent.ok else 1
    try:
        report = run_report(args.games, players, args.seed, names, args.per_game, max(1, args.jobs), packages,
                            args.generals, args.mode, on_game=progress.advance, dark_souls=args.dark_souls,
                            house=house)
    finally:
        progress.close()
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(report_json(report, args, seconds), ensure_ascii=False, indent=1))
    else:
        print_table(report, args, players, seconds)
    return 0 if report.ok else 1


def report_json(report: Report, args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    return {
        "games": report.games, "players": args.players, "seed": args.seed, "per_game": args.per_game,
        "generals": args.generals, "dark_souls": getattr(args, "dark_souls", False),
        "last_three_clock": args.last_three_clock,
        "protected_seat": "seeded" if args.protected_seat == SEEDED else args.protected_seat,
        "events": report.events, "seconds": round(seconds, 2),
        "kinds": [{"kind": k.name, "code": k.code, "summary": k.summary, **asdict(report.tallies[k.name]),
                   "collateral": report.collateral.get(k.name, Collateral()).as_json()} for k in report.kinds],
        "collateral": total_collateral(report).as_json(),
        "false_positives": [{"seed": s, "players": p, "codes": c} for s, p, c in report.false_positives],
        "failures": [asdict(f) for f in report.failures],
        "ok": report.ok,
    }


def total_collateral(report: Report) -> Collateral:
    total = Collateral()
    for c in report.collateral.values():
        total.add(c)
    return total


TALLY_HEAD = (f"{'cheat kind':26} {'must be caught as':24} {'injected':>8} {'caught':>8} {'other code':>10} "
              f"{'missed':>7}")


def tally_row(kind: str, code: str, t: Tally) -> str:
    return f"{kind:26} {code:24} {t.injected:>8} {t.caught:>8} {t.other_code:>10} {t.missed:>7}"


def run_scope(args: argparse.Namespace, players: list[int]) -> str:
    """How many games of how many players, with which cards and generals, from which seeds."""
    deck = " with " + ",".join(args.packages) if args.packages else ""
    deck += " with generals" if args.generals else ""
    deck += " in hegemony mode" if getattr(args, "mode", IDENTITY) == HEGEMONY else ""
    deck += " with dark souls" if getattr(args, "dark_souls", False) else ""
    house = HouseRules(getattr(args, "last_three_clock", False), getattr(args, "protected_seat", None))
    deck += f" with {house.describe()}" if house else ""
    return (f"{args.games} game(s) × {','.join(map(str, players))} players{deck}, seeds "
            f"{args.seed}..{args.seed + args.games - 1}")


COLLATERAL_HEAD = f"{'coll. mean':>10} {'max':>5} {'none':>5} {'stopped':>7}"


def collateral_columns(c: Collateral) -> str:
    """Mean and most violations besides the caught one per altered log, how many had none, and how many
    the verifier stopped following."""
    if not c.measured:
        return f"{'-':>10} {'-':>5} {'-':>5} {'-':>7}"
    return f"{c.mean:>10.2f} {c.most:>5} {c.none:>5} {c.stopped:>7}"


def print_table(report: Report, args: argparse.Namespace, players: list[int], seconds: float) -> None:
    print(f"cheat detection: {run_scope(args, players)}, up to {args.per_game} place(s) per kind per game")
    print()
    head = f"{TALLY_HEAD} {COLLATERAL_HEAD}"
    print(head)
    print("-" * len(head))
    total = Tally()
    for k in report.kinds:
        t = report.tallies[k.name]
        total.add(t)
        note = "   (no place in these games)" if not t.injected else ""
        print(f"{tally_row(k.name, k.code, t)} {collateral_columns(report.collateral.get(k.name, Collateral()))}"
              + note)
    print("-" * len(head))
    all_collateral = total_collateral(report)
    print(f"{tally_row('all kinds', '', total)} {collateral_columns(all_collateral)}")
    print()
    print(f"collateral: per caught cheat, the violations besides it in its altered log (the rest of the log is the "
          f"game without the cheat): mean, max, altered logs with none, and logs the verifier stopped following "
          f"(their collateral a floor); {all_collateral.total:,} violations over {all_collateral.measured} "
          "cheat(s) in complete-recording logs. A figure, not a failure")
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
    # With one cheat per game the report is what it always was; with K, each kind also says how many games
    # got 0..K cheats, and "placed_per_game" how many each game got.
    several = report.cheats_per_game > 1

    def placed(name: str) -> dict[str, Any]:
        return {"placed": report.placed.get(name, [0] * (report.cheats_per_game + 1))} if several else {}

    body: dict[str, Any] = {
        "consistent": True, "games": report.games, "players": args.players, "seed": args.seed,
        **({"cheats_per_game": report.cheats_per_game} if several else {}),
        "generals": args.generals, "packages": list(args.packages), "events": report.events,
        "seconds": round(seconds, 2),
        "kinds": [{"kind": k.name, "code": k.code, "summary": k.summary,
                   **({"needs_packages": report.unplayable[k.name]} if k.name in report.unplayable
                      else {**asdict(report.tallies[k.name]), **placed(k.name)})} for k in report.kinds],
        "failures": [asdict(f) for f in report.failures],
        "ok": report.ok,
    }
    if several:
        body["placed_per_game"] = [{"seed": s, "players": p, "placed": n} for s, p, n in report.placed_per_game]
    return body


def placed_column(counts: Sequence[int]) -> str:
    """Games by cheats placed, 0..K, as "n0/n1/.../nK"."""
    return "/".join(map(str, counts))


def print_consistent(report: ConsistentReport, args: argparse.Namespace, players: list[int], seconds: float) -> None:
    k_cheats = report.cheats_per_game
    several = k_cheats > 1
    if several:
        print(f"consistent cheats: {run_scope(args, players)}, each played once per kind with up to {k_cheats} "
              f"bots cheating once each, one per span of the game's turns ({k_cheats} spans); the game goes on "
              "from every cheat")
    else:
        print(f"consistent cheats: {run_scope(args, players)}, each played once per kind with one bot cheating "
              "once; the game goes on from the cheat")
    print()
    placed_head = f"placed {'/'.join(map(str, range(k_cheats + 1)))}"
    width = max(len(placed_head), len(placed_column([report.games] * (k_cheats + 1))))
    head = f"{TALLY_HEAD} {'collateral':>10}" + (f" {placed_head:>{width}}" if several else "")
    print(head)
    print("-" * len(head))
    total = ConsistentTally()
    total_placed = [0] * (k_cheats + 1)
    for k in report.kinds:
        if k.name in report.unplayable:
            print(f"{k.name:26} {k.code:24} {'':>8}   (needs --packages {','.join(report.unplayable[k.name])})")
            continue
        t = report.tallies[k.name]
        total.add(t)
        placed = report.placed.get(k.name, [0] * (k_cheats + 1))
        total_placed = [a + b for a, b in zip(total_placed, placed, strict=True)]
        column = f" {placed_column(placed):>{width}}" if several else ""
        note = "   (no place in these games)" if not t.injected else ""
        print(f"{tally_row(k.name, k.code, t)} {t.collateral:>10}{column}{note}")
    print("-" * len(head))
    print(f"{tally_row('all kinds', '', total)} {total.collateral:>10}"
          + (f" {placed_column(total_placed):>{width}}" if several else ""))
    print()
    if several:
        some = report.games - total_placed[-1] - total_placed[0]
        fewer = "1" if k_cheats == 2 else f"1 to {k_cheats - 1}"
        print(f"games: {report.games} played ({report.events:,} events), {total.injected} cheats placed in them: "
              f"{total_placed[-1]} game(s) got all {k_cheats}, {some} got {fewer}, {total_placed[0]} "
              f"none ({placed_head}: games by cheats placed; a game offers fewer places when a span has none its "
              "cheat stream takes for a seat that has not cheated, or the game ends before its last span)")
    else:
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
