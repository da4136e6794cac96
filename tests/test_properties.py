"""Properties over seeded self-play games of 4 to 10 players:
every game verifies clean and finishes, every card of the deck is in exactly one place
after every event, and verifying twice (also in another process with another hash seed)
gives byte-identical annotated replays."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from functools import cache

import pytest

from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from verifier import Verifier, verify
from verifier.engine.game import Game

GAMES = 200


def game_params(i: int) -> tuple[int, int, int]:
    players = 4 + i % 7
    variant = pb.ROLE_VARIANT_TWO_SPIES if players in (6, 8) and i % 3 == 0 else pb.ROLE_VARIANT_STANDARD
    return 1000 + i, players, variant


@cache
def corpus() -> list[pb.GameLog]:
    return [play_game(*game_params(i)) for i in range(GAMES)]


def card_places(game: Game) -> Counter[int]:
    places: Counter[int] = Counter()
    for p in game.players:
        places.update(p.hand)
        places.update(p.equips.values())
        places.update(p.judgment)
        places.update(p.pile)  # (cards on a general: 不屈's 创)
    places.update(game.draw_pile)
    places.update(game.discard_pile)
    places.update(game.processing)
    return places


def test_every_game_verifies_clean() -> None:
    for log in corpus():
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"
        assert replay.result.side == log.events[-1].game_over.side


def test_player_counts_and_variants_covered() -> None:
    seen = {(len(log.header.seats), log.header.options.role_variant) for log in corpus()}
    assert {n for n, _ in seen} == set(range(4, 11))
    assert (6, pb.ROLE_VARIANT_TWO_SPIES) in seen and (8, pb.ROLE_VARIANT_TWO_SPIES) in seen


def assert_cards_conserved(log: pb.GameLog, deck_size: int) -> None:
    """Replaying ``log`` event by event, every card of the deck is in exactly one place after each."""
    v = Verifier(log.header)
    game = v.game
    assert game is not None
    deck = set(game.cards)
    assert len(deck) == deck_size
    for i, ev in enumerate(log.events):
        v.feed([ev])
        places = card_places(game)
        assert set(places) == deck and max(places.values()) == 1, (log.header.seed, i, ev)


@pytest.mark.parametrize("chunk", range(4))
def test_every_card_in_exactly_one_place_after_every_event(chunk: int) -> None:
    for log in corpus()[chunk::4]:
        assert_cards_conserved(log, 108)


def assert_verified_identically_twice(logs: list[pb.GameLog]) -> None:
    for log in logs:
        assert verify(log).SerializeToString(deterministic=True) == \
            verify(log).SerializeToString(deterministic=True)


def assert_same_digests_in_another_process(logs: list[pb.GameLog], program: str, hash_seed: str) -> None:
    """``program`` (Python, run from the project root with PYTHONHASHSEED=``hash_seed``) prints the final
    digests of the same games, space-separated: they must equal those of ``logs`` verified here."""
    here = [verify(log).final_digest.hex() for log in logs]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", program], check=True, capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.split() == here


def test_verifying_twice_is_identical() -> None:
    assert_verified_identically_twice(corpus()[:40])


def test_identical_in_another_process_with_another_hash_seed() -> None:
    assert_same_digests_in_another_process(corpus()[:6], (
        "from clients.selfplay import play_game\n"
        "from verifier import verify\n"
        "from tests.test_properties import game_params\n"
        "print(' '.join(verify(play_game(*game_params(i))).final_digest.hex() for i in range(6)))\n"
    ), "12345")
