"""One kind of violation, one code (docs/codes.md#one-code): a cost of hand cards paid with a card of one's own
from the equipment area is SKILL_COST and paid all the same; a card one does not hold is CARD_NOT_OWNED; the
wrong number is INVALID_CHOICE — for every skill that costs hand cards (骁果, 天香, 好施, 放权) and 三尖两刃刀."""

from __future__ import annotations

from google.protobuf import json_format

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game
from verifier.packages.generals_standard.package import check_hand_cost
from verifier.setup import new_game, ruleset_for

HEADER = {"ruleset": "hegemony/1", "mode": "MODE_HEGEMONY", "seed": "3",
          "options": {"generals": "GENERALS_MODE_HEGEMONY"},
          "seats": [{"general": "liushan", "deputyGeneral": "menghuo"},
                    {"general": "guanyu", "deputyGeneral": "zhaoyun"},
                    {"general": "dianwei", "deputyGeneral": "xuhuang"},
                    {"general": "caoren", "deputyGeneral": "yuejin"}],
          "setup": {"stackedTop": True, "startingHands": [
              {"seat": 0, "cards": [201, 202, 203, 204]}, {"seat": 1, "cards": [205, 206, 207, 208]},
              {"seat": 2, "cards": [209, 210, 211, 212]}, {"seat": 3, "cards": [213, 214, 215, 216]}]}}


def game_with_equipped_horse() -> Game:
    header = json_format.ParseDict(HEADER, pb.GameHeader())
    game = new_game(header, ruleset_for(header))
    p = game.players[0]
    p.hand.remove(204)
    p.equips["defensive_horse"] = 211  # (any card will do: only where it lies counts)
    game.players[2].hand.remove(211)
    return game


def codes(game: Game, cards: list[int], count: tuple[int, int] = (1, 1)) -> list[tuple[str, bool]]:
    return [(v.code, v.hard) for v in check_hand_cost(game, 0, cards, "fangquan", count)]


def test_a_hand_card_pays() -> None:
    assert codes(game_with_equipped_horse(), [201]) == []


def test_an_equipped_card_of_ones_own_is_skill_cost_and_pays() -> None:
    assert codes(game_with_equipped_horse(), [211]) == [("SKILL_COST", False)]


def test_a_card_not_held_is_card_not_owned() -> None:
    assert codes(game_with_equipped_horse(), [205]) == [("CARD_NOT_OWNED", True)]


def test_the_wrong_number_is_invalid_choice() -> None:
    assert codes(game_with_equipped_horse(), [201, 202]) == [("INVALID_CHOICE", True)]


def test_three_blade_pays_the_same_way() -> None:
    game = game_with_equipped_horse()
    assert [(v.code, v.hard) for v in game.verify_cost_cards(0, [211], ("hand",), "三尖两刃刀's cost")] == [
        ("SKILL_COST", False)]
    assert [(v.code, v.hard) for v in game.verify_cost_cards(0, [205], ("hand",), "三尖两刃刀's cost")] == [
        ("CARD_NOT_OWNED", True)]
