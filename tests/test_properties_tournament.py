"""Properties over seeded self-play games with seed 003's last-three clock and first-out protection (issue 33;
clients/selfplay/tournament.py), 4 to 10 players, white and standard generals, the 108- and 160-card decks: every
game verifies clean and finishes; drains happen, each one just before the lord's turn (or the game's end), one HP
loss for every living character in seat order from the lord (docs/rules.md#last-three-clock); the protection has
work to do; every card stays in exactly one place; and verifying twice gives byte-identical annotated replays."""

from __future__ import annotations

from collections import Counter
from functools import cache

from clients.selfplay.tournament import SEEDED, HouseRules, drains, play_tournament_game
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_properties import assert_cards_conserved, assert_verified_identically_twice
from verifier import Verifier, verify
from verifier.packages.modes.first_out import FirstOutProtection
from verifier.packages.modes.last_three import LastThreeClock

GAMES = 42


def game_params(i: int) -> tuple[int, int, HouseRules, bool, tuple[str, ...]]:
    """Seed, players, the house rules (the clock in two games of three, a seeded protected seat in two of three:
    each alone and both together), generals (every other game) and the 160-card deck (every fourth)."""
    rules = HouseRules(last_three_clock=i % 3 != 2, protected_seat=SEEDED if i % 3 else None)
    return 8000 + i, 4 + i % 7, rules, bool(i % 2), ("maneuvering",) if i % 4 == 1 else ()


@cache
def corpus() -> list[pb.GameLog]:
    out = []
    for i in range(GAMES):
        seed, players, rules, generals, packages = game_params(i)
        out.append(play_tournament_game(seed, players, rules, generals=generals, packages=packages))
    return out


def engine_after(log: pb.GameLog) -> Verifier:
    v = Verifier(log.header)
    v.follow(log.events)
    return v


def test_every_game_verifies_clean() -> None:
    for i, log in enumerate(corpus()):
        rules = game_params(i)[2]
        assert log.header.options.last_three_clock == rules.last_three_clock
        assert log.header.options.HasField("protected_seat") == (rules.protected_seat is not None)
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"


def test_drains_happen_and_follow_the_rules() -> None:
    """T-1, T-2: each drain is a run of 1-HP losses, one for each living character in seat order from the lord,
    settled (dying, deaths) before the lord's turn marker, or ending the game; the engine counts as many."""
    by_players: Counter[int] = Counter()
    for log in corpus():
        starts = drains(log)
        v = engine_after(log)
        assert v.game is not None
        mode = v.game.mode
        if not log.header.options.last_three_clock:
            assert not starts
            continue
        assert isinstance(mode, LastThreeClock)
        assert mode.drains == len(starts), log.header.seed
        lord = mode.first_seat(v.game)
        dead: set[int] = set()
        events = log.events
        for i, ev in enumerate(events):
            if ev.HasField("death"):
                dead.add(ev.death.seat)
            if i not in starts:
                continue
            n = len(log.header.seats)
            living = [s for s in ((lord + k) % n for k in range(n)) if s not in dead]
            run = [e.lose_hp for e in events[i:i + len(living)]]
            assert [(x.seat, x.amount) for x in run] == [(s, 1) for s in living], (log.header.seed, i)
            after = next(e for e in events[i + len(living):] if e.WhichOneof("kind") in ("turn_start", "game_over"))
            assert after.HasField("game_over") or after.turn_start.seat == lord, (log.header.seed, i)
            by_players[n] += 1
    assert sum(by_players.values()) >= 10 and len(by_players) >= 4, by_players


def test_the_protection_has_work_to_do() -> None:
    """P-1: in the games with a protected seat, the protection prevents changes (in full at 1 HP, or in part); no
    recorded change of the protected seat takes it below 1 HP before the game's first death unless its source is
    a character it attacked."""
    prevented = 0
    for log in corpus():
        if not log.header.options.HasField("protected_seat"):
            continue
        v = engine_after(log)
        assert v.game is not None
        mode = v.game.mode
        assert isinstance(mode, FirstOutProtection) and mode.protected == log.header.options.protected_seat
        prevented += len(mode.prevented) + len(mode.reduced)
        for ev in log.events:
            if ev.HasField("death"):
                break
            if ev.HasField("lose_hp") and ev.lose_hp.seat == mode.protected:
                assert ev.lose_hp.hp_after >= 1, log.header.seed
            if ev.HasField("damage") and ev.damage.target == mode.protected and ev.damage.hp_after < 1:
                assert ev.damage.HasField("source") and ev.damage.source in mode.attacked, log.header.seed
    assert prevented >= 5


def test_cards_are_conserved() -> None:
    for log in corpus()[:12]:
        deck = 160 if "maneuvering" in log.header.options.packages else 108
        assert_cards_conserved(log, deck)


def test_verifying_twice_is_identical() -> None:
    assert_verified_identically_twice(corpus()[:12])
