"""Properties over seeded self-play games of the rebirth variant (转世, options.rebirth; issue 17): every game
verifies clean and finishes, there are rebirths in them (also second ones, and at every player count's
threshold), every card of the deck is in exactly one place after every event (a dead character's sacrificed
cards included), and verifying twice, also in another process with another hash seed, gives byte-identical
annotated replays. And the one rebirth rule self-play cannot reach: no unused general of the kingdom left."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from google.protobuf import json_format

from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_properties import (
    assert_cards_conserved,
    assert_same_digests_in_another_process,
    assert_verified_identically_twice,
)
from verifier import Verifier, verify
from verifier.packages.modes import rebirth
from verifier.packages.modes.rebirth import RebirthMode, sacrifices_needed

GAMES = 42


def game_params(i: int) -> tuple[int, int]:
    return 7000 + i, 4 + i % 7


@cache
def corpus() -> list[pb.GameLog]:
    return [play_game(seed, players, rebirth=True) for seed, players in map(game_params, range(GAMES))]


def rebirths(log: pb.GameLog) -> list[pb.Rebirth]:
    return [ev.rebirth for ev in log.events if ev.HasField("rebirth")]


def test_every_rebirth_game_verifies_clean() -> None:
    for log in corpus():
        assert log.header.options.rebirth and log.header.options.generals == pb.GENERALS_MODE_STANDARD
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"


def test_rebirths_happen_at_every_player_count() -> None:
    by_players: Counter[int] = Counter()
    twice = 0
    for log in corpus():
        reborn = rebirths(log)
        by_players[len(log.header.seats)] += len(reborn)
        twice += sum(1 for k in Counter(r.seat for r in reborn).values() if k > 1)
        for r in reborn:
            assert r.hp_after == 1
    assert set(by_players) == set(range(4, 11)) and all(by_players.values()), by_players
    assert twice, "some character is reborn a second time"


def test_sacrifices_and_rebirths_follow_the_rules() -> None:
    """Read from the logs alone: sacrifices by the current player only, at most one a turn, never by a reborn
    character, and a rebirth right after the sacrifice that makes the count."""
    for log in corpus():
        n = len(log.header.seats)
        current = -1
        given: set[int] = set()
        reborn: set[int] = set()
        held: Counter[int] = Counter()
        for i, ev in enumerate(log.events):
            kind = ev.WhichOneof("kind")
            if kind == "turn_start":
                current, given = ev.turn_start.seat, set()
            elif kind == "sacrifice":
                s = ev.sacrifice
                assert s.seat == current and s.seat not in given and s.seat not in reborn, (log.header.seed, i)
                given.add(s.seat)
                held[s.target] += 1
                due = held[s.target] == sacrifices_needed(n)
                assert log.events[i + 1].HasField("rebirth") == due, (log.header.seed, i)
            elif kind == "rebirth":
                reborn.add(ev.rebirth.seat)
                held[ev.rebirth.seat] = 0


@pytest.mark.parametrize("chunk", range(3))
def test_cards_conserved_in_rebirth_games(chunk: int) -> None:
    for log in corpus()[chunk::6]:
        assert_cards_conserved(log, 108)


def test_verifying_rebirth_games_twice_is_identical() -> None:
    assert_verified_identically_twice(corpus()[:14])


def test_rebirth_identical_in_another_process_with_another_hash_seed() -> None:
    assert_same_digests_in_another_process(corpus()[:4], (
        "from clients.selfplay import play_game\n"
        "from verifier import verify\n"
        "from tests.test_properties_rebirth import game_params\n"
        "print(' '.join(verify(play_game(*game_params(i), rebirth=True)).final_digest.hex() for i in range(4)))\n"
    ), "4242")


def test_no_general_of_the_kingdom_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/rules.md#rebirth-general: with no unused general of the dead general's kingdom there is no rebirth;
    the dead character keeps the cards and takes no more (SACRIFICE_TARGET). Unreachable with the 25 standard
    generals, so the unused generals are narrowed to those of other kingdoms than the dead 华佗's (qun)."""
    narrowed = rebirth.unused_generals
    monkeypatch.setattr(rebirth, "unused_generals",
                        lambda game: [g for g in narrowed(game) if g not in ("huatuo", "lvbu", "diaochan")])
    doc = json.loads((Path(__file__).parent / "scenarios/rebirth/rebirth_legal.json").read_text(encoding="utf-8"))
    log = json_format.ParseDict(doc["log"], pb.GameLog())
    events = list(log.events)
    third = [i for i, ev in enumerate(events) if ev.HasField("sacrifice")][2]
    assert events[third + 1].HasField("rebirth")
    del events[third + 1]  # (the recorded rebirth: there is none now)
    # The lord's next turn (events third+1 .. third+4), then seat 2's turn: seat 1 stays dead.
    more = [{"sacrifice": {"seat": 2, "target": 1, "card": 21}}, {"endPlayPhase": {"seat": 2}}]
    events = events[:third + 5] + [json_format.ParseDict(e, pb.Event()) for e in more]
    v = Verifier(log.header)
    v.follow(events)
    replay = v.finish()
    got = [(a.index, v.code) for a in replay.annotations if not a.derived for v in a.violations]
    assert got == [(third + 5, "SACRIFICE_TARGET")], got
    game = v.game
    assert game is not None and isinstance(game.mode, RebirthMode)
    dead = game.players[1]
    assert not dead.alive and len(dead.hand) == 3 and game.mode.closed == {1}
    assert not any(ev.HasField("rebirth") for a in replay.annotations for ev in [a.event] if a.derived)
