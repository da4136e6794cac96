"""Properties over seeded self-play games with dark souls (暗魂, options.dark_souls; issue 33), 4 to 10 players, with
white and with standard generals: every game verifies clean and finishes; read from the logs alone, every dead
loyalist, rebel and spy possesses a living character once its death is settled (a rebel's soul then has
the top card set aside), every soul acts at most once and never after its host died, and each of the three kinds
of soul acts somewhere; every card of the deck is in exactly one place after every event (a 玄武's set-aside card
included); verifying twice, also in another process with another hash seed, gives byte-identical replays."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from clients.selfplay.dark_souls import play_game
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_properties import (
    assert_cards_conserved,
    assert_same_digests_in_another_process,
    assert_verified_identically_twice,
)
from verifier import verify

GAMES = 42


def game_params(i: int) -> tuple[int, int, bool]:
    """Seed, players (4 to 10), and whether the game is played with the standard generals (every other one)."""
    return 9000 + i, 4 + i % 7, bool(i // 7 % 2)


@cache
def corpus() -> list[pb.GameLog]:
    return [play_game(seed, players, generals=generals) for seed, players, generals in map(game_params, range(GAMES))]


def test_every_dark_souls_game_verifies_clean() -> None:
    for log in corpus():
        assert log.header.options.dark_souls
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"


NEXT_ACTIONS = frozenset({"use_card", "end_play_phase", "soul_act", "turn_start", "phase_start"})
SOUL_OF_ROLE = {pb.ROLE_LOYALIST: "luohan", pb.ROLE_REBEL: "xuanwu", pb.ROLE_SPY: "youzhu"}


def test_possessions_and_acts_follow_the_rules() -> None:
    """Read from the logs alone: a possession for every death of a loyalist, rebel or spy that does not end the
    game, once that death is settled and before the game moves on, of a living character; a 玄武's card set aside
    right after it; each soul acts at most once, only while its host lives; each kind of soul acts in the corpus,
    and there are possessions at every player count."""
    acted: Counter[str] = Counter()
    possessions: Counter[int] = Counter()
    for log in corpus():
        events = log.events
        n = len(log.header.seats)
        alive = set(range(n))
        kind_of: dict[int, str] = {}
        host_of: dict[int, int] = {}
        due: list[int] = []  # dead seats whose possession is due (a death's outcomes are being recorded)
        spent: set[int] = set()
        for i, ev in enumerate(events):
            k = ev.WhichOneof("kind")
            where = (log.header.seed, i)
            if k == "death":
                d = ev.death
                alive.discard(d.seat)
                if d.role in SOUL_OF_ROLE:
                    kind_of[d.seat] = SOUL_OF_ROLE[d.role]
                    due.append(d.seat)
                for soul, host in host_of.items():
                    if host == d.seat:
                        spent.add(soul)  # gone unused (or already spent)
            elif k == "possess":
                p = ev.possess
                assert due == [p.seat] and p.host in alive, where
                due = []
                host_of[p.seat] = p.host
                possessions[n] += 1
                if kind_of[p.seat] == "xuanwu":
                    j = i + 2 if events[i + 1].HasField("reshuffle") else i + 1  # (an empty draw pile first)
                    m = events[j].cards_moved
                    assert events[j].HasField("cards_moved") and m.to_zone == pb.ZONE_GENERAL \
                        and m.to_seat == p.seat and m.from_zone == pb.ZONE_DRAW_PILE, where
            elif k == "soul_act":
                s = ev.soul_act
                assert s.seat in host_of and s.seat not in spent and host_of[s.seat] in alive, where
                assert s.HasField("card") == (kind_of[s.seat] == "xuanwu"), where
                spent.add(s.seat)
                acted[kind_of[s.seat]] += 1
            elif k == "game_over":
                due = []  # (the death ended the game: no possession)
            elif k in NEXT_ACTIONS:
                # The possession comes before the game moves on (decisions within the death's settlement, such as
                # 连营 on a penalty's discard, may come first).
                assert not due, where
    assert set(acted) == {"luohan", "xuanwu", "youzhu"} and all(acted.values()), acted
    assert set(possessions) == set(range(4, 11)), possessions


@pytest.mark.parametrize("chunk", range(2))
def test_cards_conserved_in_dark_souls_games(chunk: int) -> None:
    for log in corpus()[chunk::7]:
        assert_cards_conserved(log, 108)


def test_verifying_dark_souls_games_twice_is_identical() -> None:
    assert_verified_identically_twice(corpus()[:10])


def test_dark_souls_identical_in_another_process_with_another_hash_seed() -> None:
    assert_same_digests_in_another_process(corpus()[:4], (
        "from clients.selfplay.dark_souls import play_game\n"
        "from verifier import verify\n"
        "from tests.test_properties_dark_souls import game_params\n"
        "print(' '.join(verify(play_game(p[0], p[1], generals=p[2])).final_digest.hex() "
        "for p in map(game_params, range(4))))\n"
    ), "3333")
