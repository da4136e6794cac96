"""Seed 003's dark souls (暗魂, docs/rules.md#dark-souls) as a package of rules on identity mode's hooks: a dead
loyalist becomes a 罗汉 soul, a dead rebel a 玄武, a dead spy a 游助. Right after its death is settled the dead
player possesses a living character (the Possess decision, D-1); the soul acts once (the SoulAct decision, D-2):
罗汉 prevents 1 point of damage to its host (D-3), 玄武 exchanges the card set aside at its possession for one of
the host's hand cards (D-4), 游助 makes its host discard its hand and draw as many (D-5). Scoring is unchanged (D-6).

The mode's own decisions come in two ways: a Possess and a 罗汉's SoulAct answer the mode's own requests
(requests.mode_request, asked from reward_or_penalty and hp_change), a 玄武's or 游助's SoulAct comes while a play
phase waits for an action (Request.fits lets a soul_act through at any PlayRequest) and is judged and carried out
in ``intercept``, as the rebirth variant's sacrifice is. house_rules composes this class with the other house rules
(``house_rules.register`` at the bottom); it is never a branch in the engine core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import Answer, PlayRequest, Request, mode_request
from verifier.packages.modes import house_rules
from verifier.packages.modes.identity import LOYALIST, REBEL, SPY, IdentityMode

LUOHAN, XUANWU, YOUZHU = "luohan", "xuanwu", "youzhu"
# D-1: the soul a dead character's role makes (the lord has none: its death ends the game).
SOUL_OF_ROLE: dict[int, str] = {LOYALIST: LUOHAN, REBEL: XUANWU, SPY: YOUZHU}
SOUL_ZH = {LUOHAN: "罗汉", XUANWU: "玄武", YOUZHU: "游助"}

POSSESS_KINDS = frozenset({"possess"})
OFFER_KINDS = frozenset({"soul_act", "decline"})
# Why the host discards for its 罗汉 (the ChoiceRequest's reason).
LUOHAN_DISCARD = "luohan"

# Why a soul is gone (Soul.gone).
ACTED, HOST_DIED = "acted", "host died"


@dataclass(slots=True)
class Soul:
    """A dead character's soul once it possessed its host."""

    kind: str  # LUOHAN, XUANWU or YOUZHU
    host: int
    card: int | None = None  # 玄武: the card set aside at the possession, while it is set aside
    gone: str = ""  # "" while the soul may still act; else why it cannot (ACTED, HOST_DIED)

    @property
    def live(self) -> bool:
        return not self.gone


class DarkSouls(IdentityMode):
    """Identity mode with dark souls: the possession after a death, the souls' acts, and a soul gone with its host."""

    intercepts = True
    hp_hook = True
    # A dead seat's Decline is among them so that a soul may decline its 罗汉 offer explicitly (the offer is the one
    # request that asks a dead seat for a decline); one made where nothing asks it is DEAD_PLAYER (wrong_timing).
    decisions: ClassVar[frozenset[str]] = frozenset({"possess", "soul_act", "decline"})
    dead_decisions: ClassVar[frozenset[str]] = frozenset({"possess", "soul_act", "decline"})

    def __init__(self) -> None:
        super().__init__()
        self._souls: dict[int, Soul] = {}

    @property
    def souls(self) -> dict[int, Soul]:
        """Dead seat -> its soul, from its possession on. (Made on first use too: composed with other house rules,
        this class's __init__ runs only if theirs call super().__init__().)"""
        try:
            return self._souls
        except AttributeError:
            self._souls = {}
            return self._souls

    # ------------------------------------------------------------------ questions (bots, cheats, the viewer)

    def live_souls(self, game: Game, kind: str | None = None, host: int | None = None) -> list[int]:
        """The seats of the souls that may still act (of ``kind``, possessing ``host``), in seat order from the
        current player's (the order in which several are offered the same moment: D-3)."""
        return sorted((s for s, soul in self.souls.items() if soul.live and (kind is None or soul.kind == kind)
                       and (host is None or soul.host == host)), key=lambda s: (s - game.current) % game.n)

    def can_act(self, game: Game, request: Request, seat: int) -> bool:
        """May the soul of ``seat`` act now, at ``request`` (a 玄武's or 游助's act at a play-phase request)?"""
        return not self.why_not_now(game, request, seat)

    # ------------------------------------------------------------------ D-1: the possession

    def reward_or_penalty(self, game: Game, victim: int, killer: int | None) -> Settle[None]:
        """docs/rules.md#dark-souls-possession: the souls that possess the victim are gone unused (a 玄武's card to
        the discard pile, with the victim's own cards); then the reward or penalty; then the victim's own soul
        possesses a living character (D-1)."""
        for seat in sorted(self.souls):
            soul = self.souls[seat]
            if soul.host == victim and soul.live:
                soul.gone = HOST_DIED
                game.journal.append(f"('soul_gone', {seat})")
                game.set_mark(seat, soul.kind, 0)
                if soul.card is not None:
                    card, soul.card = soul.card, None
                    game.pile_out(seat, [card], pb.MOVE_REASON_DEATH)
        yield from super().reward_or_penalty(game, victim, killer)
        kind = SOUL_OF_ROLE.get(game.players[victim].role)
        if kind is not None and victim not in self.souls:
            yield from self.possession(game, victim, kind)

    def possession(self, game: Game, seat: int, kind: str) -> Settle[None]:
        """The dead seat's Possess: mandatory; a log that goes on without it is POSSESS_MISSING (the soul is then
        never at the table). A 玄武 sets the draw pile's top card aside on its general (D-4)."""
        while True:
            answer = yield mode_request(seat, POSSESS_KINDS, f"possess a living character (its soul: "
                                        f"{SOUL_ZH[kind]})", optional=False, has_default=True)
            if not isinstance(answer, pb.Event):
                game.flag("POSSESS_MISSING", f"dead seat {seat} ({SOUL_ZH[kind]}) must possess a living character "
                          "right after its death is settled, but the log goes on without its Possess", seat)
                return
            host = answer.possess.host
            if not game.report(self.verify_possess(game, seat, host)):
                break
        self.souls[seat] = soul = Soul(kind, host)
        game.journal.append(f"('possess', {seat}, {host})")
        # On the dead character while its soul may act, for the table's view: the soul's kind, its host + 1.
        game.set_mark(seat, kind, host + 1)
        if kind == XUANWU:
            card = yield from game.take_top()
            game.to_pile(seat, [card])
            soul.card = card

    def verify_possess(self, game: Game, seat: int, host: int) -> list[Violation]:
        if not game.players[host].alive:
            who = "itself" if host == seat else f"seat {host}, who is dead"
            return [Violation("POSSESS_TARGET", f"dead seat {seat} possesses {who}: a soul possesses a living "
                              "character", seat, hard=True)]
        return []

    # ------------------------------------------------------------------ D-3: 罗汉

    def hp_change(self, game: Game, seat: int, amount: int, source: int | None, is_damage: bool
                  ) -> Settle[tuple[int, str]]:
        """docs/rules.md#dark-souls-luohan: damage about to be dealt to a host (after every modification): each live
        罗汉 of the host, in seat order from the current player's, is offered to prevent 1 point while any is
        left. On its act the host discards a hand card of its choice, if it has any."""
        amount, code = yield from super().hp_change(game, seat, amount, source, is_damage)
        if not is_damage:
            return amount, code
        for soul_seat in self.live_souls(game, LUOHAN, seat):
            if amount <= 0:
                break
            if (yield from self.luohan_offer(game, soul_seat, seat, amount)):
                amount -= 1
                p = game.players[seat]
                if p.hand:
                    chosen = yield from game.choose(seat, list(p.hand), 1, LUOHAN_DISCARD)
                    if chosen:
                        yield from game.to_discard(chosen)
        return amount, code

    def luohan_offer(self, game: Game, soul_seat: int, host: int, amount: int) -> Settle[bool]:
        """Offer the 罗汉 of ``soul_seat`` to prevent 1 of ``amount`` damage to its host; True when it acts."""
        while True:
            answer = yield mode_request(soul_seat, OFFER_KINDS, f"prevent 1 of the {amount} damage to seat {host} "
                                        "(罗汉)")
            if not isinstance(answer, pb.Event) or not answer.HasField("soul_act"):
                return False
            act = answer.soul_act
            if act.HasField("card"):
                game.report([Violation("SOUL_CARD", f"the 罗汉 of seat {soul_seat} names {game.label(act.card)}: a "
                                       "罗汉's act names no card (its host chooses the card it discards)", soul_seat,
                                       act.card, hard=True)])
                continue
            self.spend(game, soul_seat)
            return True

    def spend(self, game: Game, seat: int) -> None:
        soul = self.souls[seat]
        soul.gone = ACTED
        game.journal.append(f"('soul_act', {seat})")
        game.set_mark(seat, soul.kind, 0)

    # ------------------------------------------------------------------ D-4, D-5: 玄武 and 游助

    def intercept(self, game: Game, request: Request, answer: Answer) -> Settle[bool]:
        """A SoulAct while a play phase waits for an action (D-4, D-5): judged and carried out here, then the same
        request is asked again. (A 罗汉's act answers the mode's own offer: it is not taken here.)"""
        if not isinstance(answer, pb.Event) or not answer.HasField("soul_act") or not isinstance(request, PlayRequest):
            return (yield from super().intercept(game, request, answer))
        act = answer.soul_act
        if game.report(self.verify_act(game, request, act)):
            return True
        soul = self.souls[act.seat]
        self.spend(game, act.seat)
        if soul.kind == XUANWU:
            yield from self.xuanwu(game, act.seat, soul, act.card)
        else:
            yield from self.youzhu(game, soul.host)
        return True

    def why_no_soul(self, game: Game, seat: int) -> list[Violation]:
        """What keeps ``seat`` from any soul's act: it has no soul (alive, the lord, no possession), or its soul is
        gone."""
        soul = self.souls.get(seat)
        if soul is None:
            why = ("is alive" if game.players[seat].alive else
                   "was the lord" if game.players[seat].role == pb.ROLE_LORD else "possessed nobody")
            return [Violation("NO_SOUL", f"seat {seat} has no soul to act: it {why}", seat, hard=True)]
        if soul.gone:
            why = "already acted" if soul.gone == ACTED else f"was gone unused when its host, seat {soul.host}, died"
            return [Violation("SOUL_SPENT", f"the {SOUL_ZH[soul.kind]} of seat {seat} {why}: a soul acts once", seat,
                              hard=True)]
        return []

    def why_not_now(self, game: Game, request: Request, seat: int) -> list[Violation]:
        """What keeps the soul of ``seat`` from acting at ``request`` (whatever card it names)."""
        problems = self.why_no_soul(game, seat)
        if problems:
            return problems
        soul = self.souls[seat]
        if soul.kind == LUOHAN:
            return [Violation("SOUL_TIMING", f"the 罗汉 of seat {seat} acts only when its host, seat {soul.host}, is "
                              f"about to take damage (the game is waiting for {request.describe()})", seat, hard=True)]
        if soul.kind == YOUZHU and not (isinstance(request, PlayRequest) and request.seat == soul.host):
            return [Violation("SOUL_TIMING", f"the 游助 of seat {seat} acts only while its host, seat {soul.host}, is "
                              f"asked to act in its own play phase (the game is waiting for {request.describe()})",
                              seat, hard=True)]
        if soul.kind == XUANWU and not isinstance(request, PlayRequest):
            return [Violation("SOUL_TIMING", f"the 玄武 of seat {seat} acts only while a play phase waits for an "
                              f"action (the game is waiting for {request.describe()})", seat, hard=True)]
        return []

    def verify_act(self, game: Game, request: Request, act: pb.SoulAct) -> list[Violation]:
        """docs/rules.md#dark-souls: the first problem found with a SoulAct at ``request``."""
        seat = act.seat
        problems = self.why_not_now(game, request, seat)
        if problems:
            return problems
        soul = self.souls[seat]
        if soul.kind != XUANWU:
            if act.HasField("card"):
                return [Violation("SOUL_CARD", f"the {SOUL_ZH[soul.kind]} of seat {seat} names "
                                  f"{game.label(act.card)}: only a 玄武's act names a card", seat, act.card,
                                  hard=True)]
            return []
        if not act.HasField("card"):
            return [Violation("SOUL_CARD", f"the 玄武 of seat {seat} names no card: it names the hand card of its "
                              f"host, seat {soul.host}, that its set-aside card replaces", seat, hard=True)]
        if act.card not in game.players[soul.host].hand:
            return [Violation("CARD_NOT_OWNED", f"the 玄武 of seat {seat} names {game.label(act.card)}, which is not "
                              f"in its host's (seat {soul.host}'s) hand ({game.where(act.card)})", seat, act.card,
                              hard=True)]
        return []

    def xuanwu(self, game: Game, seat: int, soul: Soul, card: int) -> Settle[None]:
        """D-4: the named hand card to the discard pile (the act names it: no outcome), then the set-aside card into
        the host's hand (CardsMoved from the soul's general)."""
        yield from game.to_discard([card])
        kept, soul.card = soul.card, None
        assert kept is not None
        yield from game.move_out(seat, [kept], pb.ZONE_GENERAL, pb.MOVE_REASON_UNSPECIFIED, "MOVE_MISMATCH",
                                 to_seat=soul.host)

    def youzhu(self, game: Game, host: int) -> Settle[None]:
        """D-5: every hand card of the host to the discard pile (CardsMoved), then it draws as many."""
        hand = list(game.players[host].hand)
        if not hand:
            return
        yield from game.move_out(host, hand, pb.ZONE_HAND, pb.MOVE_REASON_UNSPECIFIED, "MOVE_MISMATCH")
        if game.players[host].alive:
            yield from game.draw(host, len(hand), pb.DRAW_REASON_UNSPECIFIED)

    # ------------------------------------------------------------------ out of timing

    def wrong_timing(self, game: Game, kind: str, seat: int, what: str, waiting_for: str) -> Violation | None:
        """A Possess or SoulAct made where nothing it answers is asked."""
        if kind == "possess":
            return Violation("POSSESS_TIMING", f"{what}: a dead character possesses once, right after its death is "
                             f"settled; the game is waiting for {waiting_for}", seat)
        if kind == "decline":
            if game.players[seat].alive:
                return None  # (the usual WRONG_TIMING)
            return Violation("DEAD_PLAYER", f"{what}: seat {seat} is dead, and nothing asks its soul for an answer "
                             f"now (the game is waiting for {waiting_for})", seat)
        if kind == "soul_act":
            problems = self.why_no_soul(game, seat)
            if problems:
                return problems[0]
            soul = self.souls[seat]
            when = {LUOHAN: "when its host is about to take damage",
                    XUANWU: "while a play phase waits for an action",
                    YOUZHU: "while its host's own play phase waits for an action"}[soul.kind]
            return Violation("SOUL_TIMING", f"{what}: the {SOUL_ZH[soul.kind]} of seat {seat} acts only {when}; the "
                             f"game is waiting for {waiting_for}", seat)
        return super().wrong_timing(game, kind, seat, what, waiting_for)


# The third in the method order, after the last-three clock and first-out protection (HOOKS: their fixed order).
house_rules.register(house_rules.HouseRule(option="dark_souls", enabled=lambda o: o.dark_souls, mode=DarkSouls,
                                           order=3))
