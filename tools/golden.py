"""The golden corpus (tests/golden/): reviewed logs with their expected annotated output.

Usage: python tools/golden.py [--update] [--yes] [--full] [--regenerate-selfplay]

Without --update: re-verify every golden log and diff it against its expected playthrough;
exit 1 (and print the diffs) when anything differs. tests/test_golden.py runs the same check.

With --update (the one regeneration command): bring the corpus up to date and show the diff
before writing anything —
  1. the self-play games of SELFPLAY are generated if missing (--regenerate-selfplay: all of them
     again, e.g. after a change to the bots); they are fixed seeds, so this is deterministic;
  2. hand-written scenarios from tests/scenarios are added until the corpus covers every feature
     any scenario or self-play game shows (every card, skill, general, event kind and violation
     code), greedily and in a fixed order; copies whose source scenario changed are refreshed;
  3. every expected playthrough (tests/golden/expected/NAME.txt) is rendered again.
The diff is printed, then (on a terminal, unless --yes) confirmed, then written.

An expected playthrough records, per annotation: the event index, D for a derived outcome, the
status, the violation codes, the state digest (first 16 hex digits) and the event described;
then the result, whether the log was followed, the violation codes, the seats' scores (finished
identity games) and the final digest. It
leaves out the engine version (its fingerprint changes with every code change).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from google.protobuf import json_format  # noqa: E402

from sgsverify.v1 import annotation_pb2 as apb  # noqa: E402
from sgsverify.v1 import game_log_pb2 as pb  # noqa: E402
from verifier import verify  # noqa: E402
from verifier.cards import all_cards  # noqa: E402
from verifier.text import describe  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
LOGS = GOLDEN / "logs"
EXPECTED = GOLDEN / "expected"
SCENARIOS = ROOT / "tests" / "scenarios"
DIGEST_HEX = 16
DIFF_LINES = 120  # per file, unless --full


@dataclass(frozen=True, slots=True)
class SelfPlay:
    """One self-play game of the corpus: (packages, generals, players, seed). Seeds were picked
    as the shortest game among seeds 0–9 of each configuration (files stay small); the two-spy
    game takes another seed than the 8-player standard one."""

    packages: tuple[str, ...]
    generals: bool
    players: int
    seed: int
    two_spies: bool = False
    hegemony: bool = False  # 国战: its own deck and generals (packages and generals unused)
    rebirth: bool = False  # the rebirth variant (options.rebirth, with generals)
    dark_souls: bool = False  # seed 003's dark souls (options.dark_souls)
    clock: bool = False  # seed 003's last-three clock (options.last_three_clock)
    protected: bool = False  # seed 003's first-out protection of a seeded seat (options.protected_seat)

    @property
    def name(self) -> str:
        if self.hegemony:
            return f"selfplay-hegemony-p{self.players}-s{self.seed}"
        deck = "160" if "maneuvering" in self.packages else "std"
        gen = "-generals" if self.generals else ""
        spies = "-twospies" if self.two_spies else ""
        if self.rebirth:
            return f"selfplay-rebirth-p{self.players}-s{self.seed}"
        if self.dark_souls:
            return f"selfplay-darksouls{gen}-p{self.players}-s{self.seed}"
        if self.clock or self.protected:
            rules = "-".join(r for r, on in (("clock", self.clock), ("protected", self.protected)) if on)
            return f"selfplay-{rules}-p{self.players}-s{self.seed}"
        return f"selfplay-{deck}{gen}{spies}-p{self.players}-s{self.seed}"

    def play(self) -> pb.GameLog:
        from clients.selfplay import play_game

        if self.hegemony:
            return play_game(self.seed, self.players, mode=pb.MODE_HEGEMONY)
        if self.rebirth:
            return play_game(self.seed, self.players, rebirth=True)
        if self.dark_souls:
            from clients.selfplay import dark_souls

            return dark_souls.play_game(self.seed, self.players, generals=self.generals)
        if self.clock or self.protected:
            from clients.selfplay.tournament import SEEDED, HouseRules, play_tournament_game

            rules = HouseRules(self.clock, SEEDED if self.protected else None)
            return play_tournament_game(self.seed, self.players, rules, packages=self.packages, generals=self.generals)
        variant = pb.ROLE_VARIANT_TWO_SPIES if self.two_spies else pb.ROLE_VARIANT_STANDARD
        return play_game(self.seed, self.players, variant, packages=self.packages, generals=self.generals)


SELFPLAY: tuple[SelfPlay, ...] = (
    SelfPlay((), False, 4, 6),
    SelfPlay((), False, 5, 3),
    SelfPlay((), False, 6, 1),
    SelfPlay((), False, 8, 4),
    SelfPlay((), False, 8, 2, two_spies=True),
    SelfPlay((), False, 10, 5),
    SelfPlay(("maneuvering",), False, 5, 8),
    SelfPlay(("maneuvering",), False, 8, 9),
    SelfPlay((), True, 5, 7),
    SelfPlay((), True, 8, 7),
    SelfPlay(("maneuvering",), True, 6, 7),
    # Hegemony: the shortest games of seeds 0-11 at 4, 7 and 10 players, and the 5-player one that uses every
    # new card of the hegemony deck.
    SelfPlay((), False, 4, 0, hegemony=True),
    SelfPlay((), False, 5, 1, hegemony=True),
    SelfPlay((), False, 7, 9, hegemony=True),
    SelfPlay((), False, 10, 7, hegemony=True),
    # Rebirth: the shortest games with a rebirth among seeds 0-9 at 5 and 8 players.
    SelfPlay((), True, 5, 3, rebirth=True),
    SelfPlay((), True, 8, 9, rebirth=True),
    # Dark souls: the shortest games among seeds 0-9 at 5 and 8 players in which a soul acts (white generals).
    SelfPlay((), False, 5, 6, dark_souls=True),
    SelfPlay((), False, 8, 6, dark_souls=True),
    # Seed 003's house rules: the shortest game with a drain among seeds 0-9 at 5 players (the clock alone), and with
    # a drain and the protection at work at 7 players (both).
    SelfPlay((), False, 5, 6, clock=True),
    SelfPlay((), False, 7, 6, clock=True, protected=True),
)


# ---------------------------------------------------------------------------------------- logs

def load_log_file(path: Path) -> pb.GameLog:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return json_format.ParseDict(doc["log"] if "log" in doc and "header" not in doc else doc, pb.GameLog())


def log_json(log: pb.GameLog) -> str:
    return json_format.MessageToJson(log, indent=1, ensure_ascii=False) + "\n"


def golden_logs() -> list[Path]:
    return sorted(LOGS.glob("*.json"))


# ---------------------------------------------------------------------------------------- rendering

def status_name(status: int) -> str:
    return apb.Status.Name(status).removeprefix("STATUS_")


def render(name: str, log: pb.GameLog, replay: apb.AnnotatedReplay) -> str:
    """The expected playthrough of one log, as reviewable text."""
    res = replay.result
    side = pb.Side.Name(res.side).removeprefix("SIDE_") if res.finished else ""
    result = (f"finished: {side} win, seats {list(res.winners)} ({res.reason})" if res.finished
              else f"unfinished ({res.reason})")
    followed = "yes" if replay.followed else f"no, stopped at event {replay.stopped_at}: {replay.stopped_reason}"
    lines = [
        f"# golden playthrough of tests/golden/logs/{name}.json — regenerate: python tools/golden.py --update",
        f"events: {len(log.events)}, annotations: {len(replay.annotations)}",
        f"followed: {followed}",
        f"result: {result}",
        f"violations: {replay.violation_count} {' '.join(replay.violation_codes)}".rstrip(),
    ]
    if res.scores:  # identity games since scoring (docs/rules.md#scoring): not part of any digest
        lines.append(f"scores: {[s.score for s in res.scores]}")
    lines += [f"header violation: {v.code}" for v in replay.header_violations]
    lines += [f"header notice: {n.code}" for n in replay.header_notices]
    lines.append(f"final digest: {replay.final_digest.hex()}")
    lines.append("# index  D  status       digest            codes | event")
    for ann in replay.annotations:
        if ann.derived:
            what = describe(ann.event)
        elif ann.index < len(log.events):
            what = describe(log.events[ann.index])
        else:
            what = "?"
        codes = " ".join(v.code for v in ann.violations)
        applied = "" if ann.applied else " (not applied)"
        lines.append(f"{ann.index:6d}  {'D' if ann.derived else ' '}  {status_name(ann.status):11s}  "
                     f"{ann.digest.hex()[:DIGEST_HEX]:16s}  {codes + ' | ' if codes else ''}{what}{applied}")
    return "\n".join(lines) + "\n"


def render_file(path: Path) -> str:
    log = load_log_file(path)
    return render(path.stem, log, verify(log))


# ---------------------------------------------------------------------------------------- coverage

def features(log: pb.GameLog, replay: apb.AnnotatedReplay) -> set[str]:
    """What a log exercises: cards used or played in response (by name), skills invoked or
    owned by a picked general, event kinds, violation codes and result kinds."""
    from verifier.generals import standard_generals

    cards = all_cards()
    generals = standard_generals()
    out: set[str] = set()
    for ev in log.events:
        kind = ev.WhichOneof("kind")
        if kind is None:
            continue
        out.add(f"event:{kind}")
        m = getattr(ev, kind)
        if kind in ("use_card", "respond"):
            ref = m.card
            if ref.WhichOneof("kind") == "virtual":
                out.add(f"card:{ref.virtual.name}")
                out.add(f"skill:{ref.virtual.skill}")
            elif ref.id in cards:
                out.add(f"card:{cards[ref.id].name}")
        elif kind == "invoke_skill":
            out.add(f"skill:{m.skill}")
        elif kind == "pick_general" and m.general in generals:
            out.add(f"general:{m.general}")
    for seat in log.header.seats:
        if seat.general in generals:
            out.add(f"general:{seat.general}")
    for v in replay.header_violations:
        out.add(f"code:{v.code}")
    for ann in replay.annotations:
        for v in ann.violations:
            out.add(f"code:{v.code}")
    out.add(f"followed:{replay.followed}")
    return out


def coverage_of(paths: Iterable[Path]) -> set[str]:
    out: set[str] = set()
    for path in paths:
        log = load_log_file(path)
        out |= features(log, verify(log))
    return out


def scenario_name(path: Path) -> str:
    rel = path.relative_to(SCENARIOS).with_suffix("")
    return "scenario-" + "-".join(rel.parts)


def select_scenarios(have: set[str], scenarios: Sequence[Path]) -> list[Path]:
    """Greedy cover: scenarios (in sorted order, ties to the first) until every feature any of
    them shows is covered."""
    feats: dict[Path, set[str]] = {}
    for path in scenarios:
        log = load_log_file(path)
        feats[path] = features(log, verify(log)) - have
    chosen: list[Path] = []
    covered = set(have)
    while True:
        best, gain = None, 0
        for path in scenarios:
            g = len(feats[path] - covered)
            if g > gain:
                best, gain = path, g
        if best is None:
            return chosen
        chosen.append(best)
        covered |= feats[best]


# ---------------------------------------------------------------------------------------- update

@dataclass(slots=True)
class Plan:
    """Files to write (path → new text) and to delete."""

    writes: dict[Path, str]
    deletes: list[Path]


def plan_update(regenerate_selfplay: bool) -> Plan:
    writes: dict[Path, str] = {}
    logs: dict[str, str] = {p.stem: p.read_text(encoding="utf-8") for p in golden_logs()}
    for sp in SELFPLAY:
        if regenerate_selfplay or sp.name not in logs:
            logs[sp.name] = log_json(sp.play())
    scenario_files = sorted(SCENARIOS.rglob("*.json"))
    by_name = {scenario_name(p): p for p in scenario_files}
    # Refresh copies of scenarios that still exist; drop copies whose scenario is gone.
    for name in list(logs):
        if name.startswith("scenario-"):
            if name in by_name:
                logs[name] = log_json(load_log_file(by_name[name]))
            else:
                del logs[name]
    have: set[str] = set()
    for text in logs.values():
        log = json_format.Parse(text, pb.GameLog())
        have |= features(log, verify(log))
    for path in select_scenarios(have, [p for p in scenario_files if scenario_name(p) not in logs]):
        logs[scenario_name(path)] = log_json(load_log_file(path))
    for name, text in logs.items():
        path = LOGS / f"{name}.json"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            writes[path] = text
        log = json_format.Parse(text, pb.GameLog())
        expected = render(name, log, verify(log))
        epath = EXPECTED / f"{name}.txt"
        if not epath.exists() or epath.read_text(encoding="utf-8") != expected:
            writes[epath] = expected
    deletes = [p for p in golden_logs() if p.stem not in logs]
    deletes += [p for p in sorted(EXPECTED.glob("*.txt")) if p.stem not in logs]
    return Plan(writes, deletes)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def unified(path: Path, old: str, new: str, full: bool) -> list[str]:
    rel_path = rel(path)
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{rel_path}", f"b/{rel_path}",
                                     lineterm="", n=2))
    if not full and len(diff) > DIFF_LINES:
        more = len(diff) - DIFF_LINES
        diff = [*diff[:DIFF_LINES], f"... {more} more diff lines (--full shows them)"]
    return diff


def show_plan(plan: Plan, full: bool) -> None:
    for path in sorted(plan.writes):
        new = plan.writes[path]
        if path.parent == LOGS:
            state = "changed" if path.exists() else "new"
            print(f"log {state}: {rel(path)} ({new.count(chr(10))} lines)")
            continue
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        print("\n".join(unified(path, old, new, full)))
    for path in plan.deletes:
        print(f"delete: {rel(path)}")


def apply_plan(plan: Plan) -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    EXPECTED.mkdir(parents=True, exist_ok=True)
    for path, text in sorted(plan.writes.items()):
        path.write_text(text, encoding="utf-8")
    for path in plan.deletes:
        path.unlink()


# ---------------------------------------------------------------------------------------- check

def check_one(path: Path, full: bool = False) -> str | None:
    """None when the log's playthrough is as expected; else a readable report of the difference."""
    epath = EXPECTED / f"{path.stem}.txt"
    got = render_file(path)
    if not epath.exists():
        return f"{path.stem}: no expected playthrough {rel(epath)} (run python tools/golden.py --update)"
    want = epath.read_text(encoding="utf-8")
    if got == want:
        return None
    first = next((i for i, (a, b) in enumerate(zip(want.splitlines(), got.splitlines(), strict=False)) if a != b),
                 min(len(want.splitlines()), len(got.splitlines())))
    head = f"{path.stem}: the playthrough differs from line {first + 1} of {rel(epath)}"
    return "\n".join([head, *unified(epath, want, got, full),
                      "(if the change is intended: python tools/golden.py --update)"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--update", action="store_true", help="regenerate the corpus (shows the diff first)")
    parser.add_argument("--yes", "-y", action="store_true", help="write without asking")
    parser.add_argument("--full", action="store_true", help="show whole diffs")
    parser.add_argument("--regenerate-selfplay", action="store_true", help="play the self-play games again")
    args = parser.parse_args(argv)
    if args.update:
        plan = plan_update(args.regenerate_selfplay)
        if not plan.writes and not plan.deletes:
            print("the golden corpus is up to date")
            return 0
        show_plan(plan, args.full)
        if not args.yes and sys.stdin.isatty():
            answer = input(f"write {len(plan.writes)} file(s), delete {len(plan.deletes)}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing written")
                return 1
        apply_plan(plan)
        print(f"wrote {len(plan.writes)} file(s), deleted {len(plan.deletes)}")
        return 0
    failures = [r for r in (check_one(p, args.full) for p in golden_logs()) if r is not None]
    for report in failures:
        print(report)
    print(f"{len(golden_logs())} golden log(s), {len(failures)} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
