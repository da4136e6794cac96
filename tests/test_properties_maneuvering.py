"""The properties of tests/test_properties.py over 200 seeded self-play games with the 160-card deck
(军争, header packages ["maneuvering"]), 4 to 10 players, and 100 more with the 25 standard generals:
every game verifies clean and finishes,
all 160 cards are in exactly one place after every event, and verifying again (also in another
process with another hash seed) gives byte-identical annotated replays. The corpus must also
exercise the 军争 cards (elemental 杀, 酒, 火攻, 铁锁连环 and its passed-on damage, recasts,
兵粮寸断, the new equipment)."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_properties import (
    assert_cards_conserved,
    assert_same_digests_in_another_process,
    assert_verified_identically_twice,
    game_params,
)
from verifier import verify
from verifier.cards import all_cards

GAMES = 200
GENERALS_GAMES = 100
PACKAGES = ("maneuvering",)


def params(i: int) -> tuple[int, int, int]:
    seed, players, variant = game_params(i)
    return seed + 100_000, players, variant


@cache
def corpus() -> list[pb.GameLog]:
    return [play_game(*params(i), packages=PACKAGES) for i in range(GAMES)]


@cache
def generals_corpus() -> list[pb.GameLog]:
    return [play_game(*params(GAMES + i), packages=PACKAGES, generals=True) for i in range(GENERALS_GAMES)]


def test_every_game_verifies_clean() -> None:
    for log in corpus():
        assert list(log.header.options.packages) == ["maneuvering"]
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"


def test_every_game_with_generals_verifies_clean_and_keeps_all_160_cards() -> None:
    for log in generals_corpus():
        assert log.header.options.generals == pb.GENERALS_MODE_STANDARD
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
    for log in generals_corpus()[::2]:
        assert_cards_conserved(log, 160)


def test_the_maneuvering_cards_are_played() -> None:
    cards = all_cards()
    seen: Counter[str] = Counter()
    for log in corpus():
        for ev in log.events:
            kind = ev.WhichOneof("kind")
            if kind == "use_card":
                ref = ev.use_card.card
                if ev.use_card.recast:
                    seen["recast"] += 1
                elif ref.WhichOneof("kind") == "virtual":
                    seen[ref.virtual.skill] += 1
                else:
                    seen[cards[ref.id].name] += 1
            elif kind == "damage":
                seen[f"nature/{pb.DamageNature.Name(ev.damage.nature)}"] += 1
                seen["chained"] += ev.damage.chained
            elif kind == "judgment":
                seen[f"judged/{ev.judgment.reason}"] += 1
    for name in ("fire_slash", "thunder_slash", "analeptic", "fire_attack", "iron_chain", "supply_shortage",
                 "guding_blade", "fan", "vine", "silver_lion", "hualiu", "recast", "chained",
                 "nature/DAMAGE_NATURE_FIRE", "nature/DAMAGE_NATURE_THUNDER", "judged/supply_shortage"):
        assert seen[name] > 0, name


@pytest.mark.parametrize("chunk", range(4))
def test_all_160_cards_in_exactly_one_place_after_every_event(chunk: int) -> None:
    for log in corpus()[chunk::4]:
        assert_cards_conserved(log, 160)


def test_verifying_twice_is_identical() -> None:
    assert_verified_identically_twice(corpus()[:40])


def test_identical_in_another_process_with_another_hash_seed() -> None:
    assert_same_digests_in_another_process(corpus()[:6], (
        "from clients.selfplay import play_game\n"
        "from verifier import verify\n"
        "from tests.test_properties_maneuvering import PACKAGES, params\n"
        "print(' '.join(verify(play_game(*params(i), packages=PACKAGES)).final_digest.hex() for i in range(6)))\n"
    ), "54321")
