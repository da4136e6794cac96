"""拼点 (point_fight) with an empty-handed side: no skill lets one through (each refuses it first: the scenarios
hegemony/**/*_no_hand*.json), so the engine's own guard is tested here, on a game where seat 1 has just lost its
last hand card. Such a 拼点 asks nobody for a card, moves nothing and is lost by the side that started it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_scenarios import SCENARIOS, load
from verifier.engine.game import Game
from verifier.packages.generals_hegemony.package import point_fight
from verifier.replay import Verifier

# 太史慈 (seat 0) has emptied seat 1's hand with three 过河拆桥 and a 顺手牵羊: events 0-8 of this scenario.
EMPTIED = SCENARIOS / "hegemony" / "wu" / "tianyi_no_hand_target.json"
EMPTIED_EVENTS = 9


def game_with_empty_seat_1(path: Path = EMPTIED) -> Game:
    _, log = load(path)
    v = Verifier(log.header)
    v.feed(log.events[:EMPTIED_EVENTS])
    assert v.game is not None
    assert not v.game.players[1].hand and v.game.players[0].hand
    return v.game


@pytest.mark.parametrize(("a", "b"), [(0, 1), (1, 0)], ids=["empty_second", "empty_first"])
def test_point_fight_with_an_empty_hand_asks_nobody(a: int, b: int) -> None:
    game = game_with_empty_seat_1()
    hands = [list(p.hand) for p in game.players]
    fight = point_fight(game, a, b, "probe")
    with pytest.raises(StopIteration) as stop:
        request = next(fight)
        pytest.fail(f"the 拼点 asked for a card: {request!r}")
    assert stop.value.value is False
    assert [list(p.hand) for p in game.players] == hands
    assert not game.violations
