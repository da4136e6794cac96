"""Properties over seeded self-play games with the 25 standard generals (issue 5): every game
verifies clean and finishes, every card is in exactly one place after every event, all 25
generals are picked and every skill that is invoked is invoked somewhere."""

from __future__ import annotations

from collections import Counter
from functools import cache

from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_properties import assert_cards_conserved
from verifier import verify
from verifier.generals import standard_generals
from verifier.packages.generals_standard import PACKAGE

GAMES = 200
PASSIVE = {"mashu", "paoxiao", "kongcheng", "qicai", "qianxun", "wushuang", "jiuyuan"}  # never invoked
VIEW_AS = {"wusheng", "qingguo", "longdan", "qixi", "guose", "jijiu"}  # virtual cards, not invocations


@cache
def corpus() -> list[pb.GameLog]:
    return [play_game(5000 + i, 4 + i % 7, generals=True) for i in range(GAMES)]


def test_every_generals_game_verifies_clean() -> None:
    for log in corpus():
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"


def test_all_generals_and_skills_in_play() -> None:
    picked: Counter[str] = Counter()
    used: Counter[str] = Counter()
    for log in corpus():
        for ev in log.events:
            kind = ev.WhichOneof("kind")
            if kind == "pick_general":
                picked[ev.pick_general.general] += 1
            elif kind == "invoke_skill":
                used[ev.invoke_skill.skill] += 1
            elif kind in ("use_card", "respond") and getattr(ev, kind).card.HasField("virtual"):
                used[getattr(ev, kind).card.virtual.skill] += 1
    assert set(picked) == set(standard_generals())
    assert len(PACKAGE.effects) == 40
    assert set(PACKAGE.effects) - PASSIVE <= set(used), sorted(set(PACKAGE.effects) - PASSIVE - set(used))
    assert set(used) >= VIEW_AS


def test_cards_conserved_with_generals() -> None:
    for log in corpus()[:40]:
        assert_cards_conserved(log, 108)
