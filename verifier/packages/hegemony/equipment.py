"""The hegemony deck's new weapons: 吴六剑 and 三尖两刃刀 (docs/rules.md#hegemony-deck)."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import DamageInfo, Game, Settle, Violation
from verifier.engine.requests import UNANSWERED, offer_request
from verifier.packages.hegemony.package import PACKAGE
from verifier.packages.standard.equipment import EquipSpec, Weapon

for _name in ("wu_six_swords", "triblade"):
    PACKAGE.card(type(f"Equip_{_name}", (EquipSpec,), {"name": _name, "__doc__": f"Equip {_name}."}))


@PACKAGE.effect
class WuSixSwords(Weapon):
    """吴六剑 (docs/rules.md#wu-six-swords): every other character of your kingdom has attack range +1."""

    name = "wu_six_swords"

    def range_bonus_to(self, game: Game, holder: int, seat: int) -> int:
        return 1 if seat != holder and game.players[holder].kingdom and game.mode.same_side(game, holder, seat) else 0


@PACKAGE.effect
class Triblade(Weapon):
    """三尖两刃刀 (docs/rules.md#triblade): after your 杀 damages a character who is still alive, you may discard a
    hand card (InvokeSkill triblade: cards [it], targets [the other]) to deal 1 damage to another character at
    distance 1 from it."""

    name = "triblade"


def triblade_rule(game: Game, info: DamageInfo) -> Settle[None]:
    user, target, card = info.source, info.target, info.card
    if user is None or card is None or info.chained or not card.name.endswith("slash"):
        return
    if not game.players[user].alive or not game.players[target].alive or not game.has_effect(user, "triblade"):
        return
    if not game.players[user].hand or not any(game.distance(target, t) == 1 for t in game.alive_seats()
                                              if t not in (user, target)):
        return
    while True:
        answer = yield offer_request(user, "triblade", target=target)
        if answer is None or answer is UNANSWERED:
            return
        assert isinstance(answer, pb.Event)
        inv = answer.invoke_skill
        if not answer.HasField("invoke_skill") or inv.skill != "triblade":
            game.report([Violation("SKILL_NOT_AVAILABLE", f"seat {user} may invoke only triblade here", user,
                                   hard=True)])
            continue
        cards, targets = list(inv.cards), list(inv.targets)
        problems = game.verify_cost_cards(user, cards, ("hand",), "三尖两刃刀's cost")
        if not any(v.hard for v in problems) and len(cards) != 1:
            problems = [Violation("INVALID_CHOICE", "三尖两刃刀 discards exactly one hand card", user, hard=True)]
        if not problems and (len(targets) != 1 or targets[0] >= game.n or targets[0] in (user, target)
                             or not game.players[targets[0]].alive or game.distance(target, targets[0]) != 1):
            problems = [Violation("INVALID_TARGET", f"三尖两刃刀 deals its damage to one other living character at "
                                  f"distance 1 from seat {target}, not {targets}", user, hard=True)]
        if game.report(problems):
            continue
        yield from game.to_discard(cards)
        yield from game.damage(user, targets[0], 1)
        return


PACKAGE.after_damage.append(triblade_rule)
