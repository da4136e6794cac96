"""How packages plug into the core: card specs, effects (equipment now, skills later),
and the Ruleset that assembles them for one game.

A card spec keeps its legality check and its effect side by side (``verify_use`` /
``use``); an effect answers the core's questions (distance, range, slash limit) and
offers its triggers. Adding a package means registering new specs and effects; the core
never names them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from mypy_extensions import mypyc_attr

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit, card_name_zh, color_of
from verifier.engine.game import DamageInfo, Game, Settle, Trigger, Violation
from verifier.engine.requests import SKILL_ANSWERS, UNANSWERED, card_request, name_matches, offer_request

NULLIFICATION = frozenset({"nullification"})


@dataclass(frozen=True, slots=True)
class UsedCard:
    """A card as used or played: one real card, or a virtual card made by an effect."""

    name: str
    ids: tuple[int, ...]  # the physical cards
    suit: Suit
    color: Color
    number: int
    real: CardDef | None = None
    skill: str = ""

    @property
    def is_virtual(self) -> bool:
        return self.real is None


@mypyc_attr(allow_interpreted_subclasses=True)  # (compiled: setup.py; subclassed by the interpreted packages)
class Effect:
    """An equipment effect (and, later, a general's skill). Every hook is optional."""

    name: ClassVar[str] = ""
    # Card names this effect can make as virtual cards (丈八蛇矛: "slash").
    converts_to: ClassVar[frozenset[str]] = frozenset()
    # Card names this effect can provide when asked for them without a card (八卦阵: "jink").
    provides: ClassVar[frozenset[str]] = frozenset()
    is_armor: ClassVar[bool] = False
    # A weapon whose 杀 ignores the target's armor (青釭剑).
    ignores_armor: ClassVar[bool] = False
    # --- generals' skills
    # A general's skill (not equipment): invoking it without having it is SKILL_NOT_OWNED.
    is_skill: ClassVar[bool] = False
    # Trigger timings the skill reacts to (Game.trigger): "judging", "judged", "damaged",
    # "phase_start", "draw_phase", "before_phase", "slash_targeted", "slash_target_chosen",
    # "trick_used", "lost_hand", "lost_equip".
    timings: ClassVar[frozenset[str]] = frozenset()
    # An active skill invoked on one's own initiative in one's play phase (制衡, 仁德, ...).
    active: ClassVar[bool] = False
    # Most uses per play phase for an active skill (0: no limit).
    per_phase: ClassVar[int] = 0
    # A limited skill (限定技): once a game; its use sets the owner's mark of the skill's name (Player.marks), and
    # invoking it again is SKILL_LIMIT.
    limited: ClassVar[bool] = False
    # A conversion skill whose virtual card may also be recast (连环: a ♣ hand card recast as 铁锁连环).
    recasts: ClassVar[bool] = False
    # The outcome kind the effect's trigger starts with when it asks nothing first (白银狮子's recovery: "recover"),
    # for the order of simultaneous triggers a log shows (requests.OrderChance); "" when it is offered first.
    trigger_outcome: ClassVar[str] = ""

    # --- questions the core asks
    def distance_from(self, game: Game, seat: int) -> int:
        return 0

    def distance_to(self, game: Game, seat: int) -> int:
        return 0

    def attack_range(self, game: Game, seat: int) -> int | None:
        return None

    def range_bonus_to(self, game: Game, holder: int, seat: int) -> int:
        """As ``holder``'s effect: what it adds to another character ``seat``'s attack range (吴六剑)."""
        return 0

    def unlimited_slash(self, game: Game, seat: int) -> bool:
        return False

    def turns_slash(self, game: Game, seat: int, card: UsedCard) -> str:
        """The card this effect may turn ``card``, a 杀 its owner uses but did not make, into (朱雀羽扇: a
        normal 杀 into a 火杀); offered by whatever hands the owner that 杀 (激将). "" when it cannot."""
        return ""

    def extra_slash_targets(self, game: Game, use: Use) -> int:
        return 0

    # --- 杀 settlement hooks, in the order they happen
    def on_slash_target(self, game: Game, use: Use, target: int) -> Settle[None]:
        """The user's effect after choosing ``target`` (雌雄双股剑)."""
        return None
        yield  # pragma: no cover

    def slash_has_no_effect(self, game: Game, use: Use) -> bool:
        """The target's armor: is this 杀 without effect on its wearer (仁王盾)?"""
        return False

    def on_slash_jinked(self, game: Game, use: Use, target: int) -> Settle[bool]:
        """The user's effect after the 杀 was dodged; True if it still hits (贯石斧)."""
        return False
        yield  # pragma: no cover

    def on_slash_hit(self, game: Game, use: Use, target: int) -> Settle[bool]:
        """The user's effect when the 杀 would deal damage; True if the damage is prevented (寒冰剑)."""
        return False
        yield  # pragma: no cover

    # --- conversions (view-as)
    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        return [Violation("INVALID_CONVERSION", f"{self.name} cannot make a {virtual.name}", seat, hard=True)]

    # --- providing a card without one (八卦阵)
    def can_provide(self, game: Game, seat: int) -> bool:
        """May it be offered now (八阵: only with no armor equipped)?"""
        return True

    def provide(self, game: Game, seat: int, reason: str) -> Settle[UsedCard | None]:
        return None
        yield  # pragma: no cover

    # --- damage on its way (Game.damage): change ``info.amount``
    def damage_caused(self, game: Game, info: DamageInfo) -> None:
        """As the damage source's effect (古锭刀)."""

    def damage_inflicted(self, game: Game, info: DamageInfo) -> None:
        """As the damaged character's effect (藤甲 +1 fire, 白银狮子 at most 1); armor is skipped when the
        damage ignores it (青釭剑)."""

    # --- armor: a card without effect on its wearer
    def card_has_no_effect(self, game: Game, use: Use, target: int) -> bool:
        """Is ``use`` without effect on ``target``, this armor's wearer (藤甲: ordinary 杀, 南蛮入侵, 万箭齐发)?
        Asked before any response or 无懈可击 window; not under 青釭剑 (see armor_voids)."""
        return False

    # --- leaving the equipment area
    def on_lost(self, game: Game, seat: int) -> None:
        """The card with this effect has just left ``seat``'s equipment area (白银狮子)."""

    # --- skills
    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        """React at one of ``timings``; ``owner`` has the skill."""
        return None
        yield  # pragma: no cover

    def prohibits_target(self, game: Game, owner: int, user: int, card_name: str) -> bool:
        """May ``owner`` not be chosen as a target of ``card_name`` by ``user`` (空城, 谦逊)?"""
        return False

    def unlimited_distance(self, game: Game, seat: int, card_name: str) -> bool:
        """Does ``seat``'s ``card_name`` ignore its distance limit (奇才)?"""
        return False

    def distance_limit(self, game: Game, seat: int, card_name: str) -> int:
        """The distance ``seat``'s ``card_name`` may reach, when this effect widens it (断粮: 兵粮寸断 to 2); 0: no
        change."""
        return 0

    def seen_suit(self, game: Game, seat: int, card: CardDef) -> Suit:
        """The suit ``seat``'s card counts as under this skill (红颜: ♠ as ♥); see Game.card_as."""
        return card.suit

    def distance_fixed(self, game: Game, seat: int, to: int) -> int | None:
        """What ``seat``'s distance to ``to`` counts as, when this effect fixes it (奋迅: 1); None: no change."""
        return None

    def after_recover(self, game: Game, seat: int) -> None:
        """``seat``, who has cards on their general, has just recovered (不屈's 创 beyond 1 − HP go)."""

    def forbids_use(self, game: Game, seat: int, card_name: str) -> str:
        """Why ``seat`` may not use ``card_name`` now (天义 lost: no 杀 this turn; asked by 杀's own check); ""."""
        return ""

    def redirect_source(self, game: Game, owner: int, info: DamageInfo) -> int | None:
        """As a living character's effect: the source the damage ``info`` is dealt by instead (祸首: the 南蛮入侵 of
        another), or None."""
        return None

    def extra_responses(self, game: Game, seat: int, reason: str) -> int:
        """Extra cards an opponent of ``seat`` must give to answer ``reason`` ("slash", "duel"; 无双)."""
        return 0

    def forbids_rescue(self, game: Game, owner: int, rescuer: int, dying: int) -> bool:
        """As ``owner``'s effect: may ``rescuer`` not use 桃 to save ``dying`` now (完杀)?"""
        return False

    def forbids_reveal(self, game: Game, owner: int, seat: int) -> bool:
        """As ``owner``'s effect: may ``seat`` not reveal a general now (hegemony; 祸水)?"""
        return False

    def recover_bonus(self, game: Game, seat: int, user: int, card: UsedCard) -> int:
        """Extra HP ``seat`` recovers from ``user``'s ``card`` (救援)."""
        return 0

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        """An active skill invoked in the play phase (checked and settled here)."""
        return None
        yield  # pragma: no cover


@dataclass(frozen=True, slots=True)
class Use:
    """One use of a card: who, what, on whom."""

    user: int
    card: UsedCard
    targets: tuple[int, ...]
    # Extra damage this use deals to each target (酒's bonus, taken by the 杀 it goes with).
    damage_bonus: int = 0


DamageRule = Callable[[Game, DamageInfo], Settle[None]]
# (game, trick, target, delayed trick card) -> is the effect on the target cancelled?
NullifyRule = Callable[[Game, str, "int | None", "int | None"], Settle[bool]]

# The reason a 杀's target is asked for its 闪 (packages/standard/basic.py slash_hits): a card that does not answer it,
# carried out in a server's record, answers nothing (Ruleset.ask_for_card).
SLASH_JINK_REASON = "杀"


def armor_voids(game: Game, use: Use, target: int, ignores_armor: bool = False) -> bool:
    """Is ``use`` without effect on ``target`` because of their armor (藤甲 against ordinary 杀, 南蛮入侵 and
    万箭齐发; 仁王盾 against black 杀)? Never when the armor is ignored (青釭剑)."""
    if ignores_armor:
        return False
    is_slash = use.card.name.endswith("slash")
    return any(e.is_armor and (e.card_has_no_effect(game, use, target)
                               or (is_slash and e.slash_has_no_effect(game, use)))
               for e in game.effects_of(target))


@mypyc_attr(allow_interpreted_subclasses=True)  # (compiled: setup.py; subclassed by the interpreted packages)
class CardSpec:
    """One card name's rules. Subclasses set the class attributes and override hooks."""

    name: ClassVar[str] = ""
    # Can it be used on one's own initiative in one's play phase?
    play_phase: ClassVar[bool] = True

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        """Why this use is illegal (nothing when it is legal)."""
        return iter(())

    # How many of the named targets are the card's targets, the rest being what it names besides (借刀杀人: the
    # weapon holder, not the one to attack); 0: all. Only those become targets (skills that cancel a target).
    confirmed_targets: ClassVar[int] = 0

    # Can it be recast (重铸: discarded for a new card) in one's play phase instead of used (铁锁连环)?
    recastable: ClassVar[bool] = False

    def recast(self, game: Game, seat: int, card: UsedCard) -> Settle[None]:
        """重铸: the card goes to the discard pile and its user draws 1. Not a use: no 无懈可击 window."""
        yield from game.to_processing(card.ids)
        game.processing_to_discard(card.ids)
        yield from game.draw(seat, 1, pb.DRAW_REASON_RECAST)

    def can_use(self, game: Game, use: Use) -> bool:
        return not any(True for _ in self.verify_use(game, use))

    def can_carry_out(self, game: Game, use: Use) -> bool:
        """Can the settlement take this use although its rules forbid it (in a server's record, which carried it out:
        Game.report's can_carry_out)? Most settlements take any targets, each as a legal target would be; a card
        whose settlement needs its targets to be what the rules ask (借刀杀人's weapon holder) says no, and the use is
        rejected as in any log."""
        return True

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        """Targets the rules fix when the log names none (e.g. 南蛮入侵: everyone else)."""
        return ()

    def use(self, game: Game, use: Use) -> Settle[None]:
        """Put the card into play and settle it (``game.using`` holds it meanwhile)."""
        yield from game.to_processing(use.card.ids)
        game.using.append(use)
        try:
            yield from self.resolve(game, use)
        finally:
            game.using.pop()
        game.processing_to_discard(use.card.ids)
        if "card_done" in game.ruleset.timings:
            # The card has settled and lies in the discard pile (巨象 takes a 南蛮入侵 from there).
            yield from game.trigger("card_done", Trigger(use.user, card=use.card, use=use))

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        return None
        yield  # pragma: no cover

    def cancelled(self, game: Game, use: Use) -> Settle[None]:
        """The use lost every target as they became its targets (空城 cancels itself): the card is still used, and
        goes to the discard pile with no effect."""
        yield from game.to_processing(use.card.ids)
        game.processing_to_discard(use.card.ids)

    # For self-play bots: candidate target lists worth trying.
    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [()]


def settled() -> Settle[None]:
    """A settlement with nothing left to do (a decision rejected or without effect)."""
    return
    yield  # pragma: no cover


@mypyc_attr(allow_interpreted_subclasses=True)  # (compiled: setup.py; subclassed by the interpreted packages)
class DelayedSpec(CardSpec):
    """A delayed trick: placed in a judgment area, judged in its owner's judgment phase."""

    def judge_phase(self, game: Game, seat: int, card_id: int) -> Settle[set[int]]:
        """Resolve the card in ``seat``'s judgment phase; return the phases to skip."""
        return set()
        yield  # pragma: no cover


@dataclass
class Package:
    """A unit of content: card specs and effects, registered by name."""

    name: str
    cards: dict[str, CardSpec] = field(default_factory=dict)
    effects: dict[str, Effect] = field(default_factory=dict)
    # Rules that see every damage once it is dealt and settled (铁锁连环 passes elemental damage on).
    after_damage: list[DamageRule] = field(default_factory=list)
    # A rule that settles 无懈可击 windows in place of Game.nullified's own (无懈可击·国's kingdom-wide use).
    nullify_rule: NullifyRule | None = None

    def card(self, cls: type[CardSpec]) -> type[CardSpec]:
        """Class decorator: register a card spec."""
        self.cards[cls.name] = cls()
        return cls

    def effect(self, cls: type[Effect]) -> type[Effect]:
        """Class decorator: register an effect."""
        self.effects[cls.name] = cls()
        return cls


class Ruleset:
    """The packages in force for one game, and the generic handling of decisions."""

    def __init__(self, packages: list[Package]) -> None:
        self.packages = packages
        self.cards: dict[str, CardSpec] = {}
        self.effects: dict[str, Effect] = {}
        self.after_damage: list[DamageRule] = []
        self.nullify_rule: NullifyRule | None = None
        # A real card used is always the same (frozen) UsedCard: made once per card.
        self._real_used: dict[int, UsedCard] = {}
        for pkg in packages:
            self.cards.update(pkg.cards)
            self.effects.update(pkg.effects)
            self.after_damage.extend(pkg.after_damage)
            self.nullify_rule = pkg.nullify_rule or self.nullify_rule
        for name, eff in self.effects.items():
            if eff.is_skill and (eff.converts_to or eff.provides):
                SKILL_ANSWERS[name] = eff.converts_to | eff.provides
        # Effects that change the attack range of others (吴六剑): Game.attack_range asks them only if any.
        self.range_auras = frozenset(n for n, e in self.effects.items()
                                     if type(e).range_bonus_to is not Effect.range_bonus_to)
        # What Game.damage and Game.remove_from_owner need to look at (nothing, for the standard deck).
        self.lost_hooks: dict[str, Effect] = {n: e for n, e in self.effects.items()
                                              if type(e).on_lost is not Effect.on_lost}
        # Every trigger timing some effect reacts to: the core runs the rarer ones only when one does.
        self.timings: frozenset[str] = frozenset(t for e in self.effects.values() for t in e.timings)
        self.distance_limits = any(type(e).distance_limit is not Effect.distance_limit for e in self.effects.values())
        # Skills that change the suits of their owner's cards (红颜) and that fix a distance (奋迅): Game.card_as
        # and Game.distance look for them only if any.
        self.suit_filters = frozenset(n for n, e in self.effects.items() if type(e).seen_suit is not Effect.seen_suit)
        self.distance_overrides = any(type(e).distance_fixed is not Effect.distance_fixed
                                      for e in self.effects.values())
        self.use_bans = any(type(e).forbids_use is not Effect.forbids_use for e in self.effects.values())
        # Effects that may turn a 杀 their owner uses into another (朱雀羽扇): use_card offers them only if any.
        self.slash_turners = frozenset(n for n, e in self.effects.items()
                                       if type(e).turns_slash is not Effect.turns_slash)
        self.source_redirects = any(type(e).redirect_source is not Effect.redirect_source
                                    for e in self.effects.values())
        self.rescue_rules = tuple(e for e in self.effects.values()
                                  if type(e).forbids_rescue is not Effect.forbids_rescue)
        self.damage_pipeline = bool(self.after_damage) or self.source_redirects or \
            "damage_incoming" in self.timings or any(
            type(e).damage_caused is not Effect.damage_caused or type(e).damage_inflicted is not Effect.damage_inflicted
            for e in self.effects.values())

    def real_card(self, card: CardDef) -> UsedCard:
        """A real card as used: one cached UsedCard per card (it is frozen)."""
        used = self._real_used.get(card.id)
        if used is None or used.real is not card:
            used = self._real_used[card.id] = UsedCard(card.name, (card.id,), card.suit, card.color, card.number,
                                                       real=card)
        return used

    def delayed(self, name: str) -> DelayedSpec:
        spec = self.cards[name]
        assert isinstance(spec, DelayedSpec)
        return spec

    # ------------------------------------------------------------ reading card references

    def resolve_card(self, game: Game, seat: int, ref: pb.CardRef, zones: tuple[str, ...] = ("hand",)
                     ) -> UsedCard | None:
        """The card a decision names, checked to be the seat's to use; None (reported) if not."""
        which = ref.WhichOneof("kind")
        if which == "id":
            cid = ref.id
            card = game.cards.get(cid)
            if card is None:
                game.report([Violation("UNKNOWN_CARD", f"card #{cid} is not in this game's deck", seat, cid,
                                       hard=True)])
                return None
            problems = game.verify_own_cards(seat, [cid], zones)
            if problems and not game.take_recorded(seat, cid, problems) and game.report(problems):
                return None
            if self.suit_filters:
                seen = game.card_as(seat, cid)
                if seen is not card:  # (红颜: a ♠ card of 小乔's is used as a ♥ one)
                    return UsedCard(card.name, (cid,), seen.suit, seen.color, card.number, real=card)
            return self.real_card(card)
        if which == "virtual":
            v = ref.virtual
            if v.name not in self.cards:
                game.report([Violation("UNKNOWN_CARD", f"no card is named {v.name!r}", seat, hard=True)])
                return None
            effect = next((e for e in game.effects_of(seat) if e.name == v.skill), None)
            if effect is None and v.skill:
                missing = missing_skill(game, seat, v.skill)
                if missing is not None:
                    game.report([missing])
                    return None
            if effect is None or v.name not in effect.converts_to:
                game.report([Violation("INVALID_CONVERSION", f"seat {seat} has no {v.skill or 'effect'} that "
                                       f"makes a {v.name}", seat, hard=True)])
                return None
            if game.report(effect.verify_conversion(game, seat, v)):
                return None
            ids = tuple(v.subcards)
            cards = game.cards
            suits = {game.card_as(seat, c).suit for c in ids} if self.suit_filters else {cards[c].suit for c in ids}
            colors = {color_of(s) for s in suits}
            suit = suits.pop() if len(suits) == 1 else Suit.NONE
            color = colors.pop() if len(colors) == 1 else Color.NONE
            number = game.cards[ids[0]].number if len(ids) == 1 else 0
            return UsedCard(v.name, ids, suit, color, number, skill=v.skill)
        game.report([Violation("MALFORMED_EVENT", "the decision names no card", seat, hard=True)])
        return None

    # ------------------------------------------------------------ play-phase actions

    # play_action and use_card check a decision at once and return the settlement to run, rather
    # than being generators themselves: every request yielded while a card settles passes through
    # each generator level on its way out and each answer on its way in, and these two levels
    # would carry nothing.

    def play_action(self, game: Game, seat: int, ev: pb.Event) -> Settle[None]:
        kind = ev.WhichOneof("kind")
        if kind == "use_card":
            return self.use_card(game, seat, ev.use_card)
        if kind == "invoke_skill":
            return self.invoke_in_play(game, seat, ev.invoke_skill)
        return settled()

    def invoke_in_play(self, game: Game, seat: int, inv: pb.InvokeSkill) -> Settle[None]:
        name = inv.skill
        effect = next((e for e in game.effects_of(seat) if e.name == name), None)
        if effect is None:
            borrowed = borrowed_skill(game, seat, name)
            if borrowed is not None:
                game.violations.append(borrowed)
                effect = self.effects[name]
        if effect is not None and effect.active:
            p = game.players[seat]
            if effect.per_phase and p.skill_uses.get(name, 0) >= effect.per_phase:
                game.report([Violation("SKILL_LIMIT", f"seat {seat} already used {name} {effect.per_phase} "
                                       "time(s) in this play phase", seat, hard=True)])
                return settled()
            return effect.activate(game, seat, inv)
        code = "SKILL_TIMING" if effect is not None and effect.is_skill else "SKILL_NOT_AVAILABLE"
        game.report([Violation(code, f"seat {seat} cannot invoke {name!r} on their own "
                               "initiative in the play phase: nothing asks for it now", seat, hard=True)])
        return settled()

    def use_card(self, game: Game, seat: int, uc: pb.UseCard) -> Settle[None]:
        card = self.resolve_card(game, seat, uc.card)
        if card is None:
            return settled()
        spec = self.cards.get(card.name)
        if spec is None or not spec.play_phase:
            if game.report([Violation("WRONG_TIMING", f"seat {seat} cannot use {game.used_card_label(card)} on "
                                      "their own initiative in the play phase", seat, card.ids[0] if card.ids
                                      else None, hard=True)], can_carry_out=spec is not None) or spec is None:
                return settled()
            # (a server's record: used all the same, with nothing to settle — a 闪 answers no 杀 here)
            return spec.cancelled(game, Use(seat, card, tuple(uc.targets)))
        if uc.recast:
            maker = next((e for e in game.effects_of(seat) if e.name == card.skill), None) if card.is_virtual \
                else None
            if not spec.recastable or (card.is_virtual and (maker is None or not maker.recasts)):
                game.report([Violation("WRONG_CARD", f"seat {seat} cannot recast {game.used_card_label(card)}: "
                                       "only 铁锁连环 can be recast", seat, card.ids[0] if card.ids else None,
                                       hard=True)])
            elif uc.targets:
                game.report([Violation("INVALID_TARGET", f"a recast {game.used_card_label(card)} takes no targets",
                                       seat, hard=True)])
            else:
                return spec.recast(game, seat, card)
            return settled()
        targets = tuple(uc.targets)
        for t in targets:
            if t >= game.n:
                game.report([Violation("SEAT_OUT_OF_RANGE", f"target seat {t} is not at the table", seat,
                                       hard=True)])
                return settled()
            if not game.players[t].alive:
                game.report([Violation("INVALID_TARGET", f"seat {t} is dead and cannot be a target", seat,
                                       hard=True)])
                return settled()
        if not targets:
            targets = spec.default_targets(game, seat)
        use = Use(seat, card, targets)
        if game.has_skills:
            for t in targets:
                eff = game.prohibited(seat, t, card.name)
                if eff is not None and game.report([Violation(
                        "TARGET_PROHIBITED", f"seat {t}'s {eff.name} forbids choosing them as a target of "
                        f"{game.used_card_label(card)}", seat, hard=True)], can_carry_out=True):
                    return settled()
        if game.report(spec.verify_use(game, use), can_carry_out=spec.can_carry_out(game, use)):
            return settled()
        if game.mode.use_hook:
            game.mode.card_used(game, seat, card.name, targets)
        if game.has_skills and card.name.endswith("slash"):
            game.players[seat].turn_flags["slash_in_play"] = 1
        if self.slash_turners and card.name == "slash" and any(
                e.name in self.slash_turners and e.turns_slash(game, seat, card) for e in game.effects_of(seat)):
            return self._turned_then_used(game, use)
        if game.has_skills:
            return self._used_with_skills(game, spec, use)
        return spec.use(game, use)

    def _turned_then_used(self, game: Game, use: Use) -> Settle[None]:
        """A normal 杀 used by a character whose effect may turn it into another 杀 (朱雀羽扇: a 火杀): the effect is
        offered as the 杀 is used, before anything else about it — the targets' skills and armour (仁王盾, 藤甲)
        come after (docs/rules.md#fan-offer). The turned 杀 keeps the card's suit, colour and number (a black 火杀
        still does nothing to a 仁王盾 wearer). Declined, the 杀 goes on as it was."""
        seat, card = use.user, use.card
        turned = ""
        for eff in game.effects_of(seat):
            name = eff.turns_slash(game, seat, card) if eff.name in self.slash_turners else ""
            while name and not turned:
                answer = yield offer_request(seat, eff.name)
                if answer is None or answer is UNANSWERED:
                    break
                assert isinstance(answer, pb.Event)
                if answer.HasField("invoke_skill") and answer.invoke_skill.skill == eff.name:
                    turned = eff.name
                    use = Use(seat, UsedCard(name, card.ids, card.suit, card.color, card.number, skill=turned),
                              use.targets, use.damage_bonus)
                else:
                    game.report([Violation("SKILL_NOT_AVAILABLE", f"seat {seat} may invoke only {eff.name} here",
                                           seat, hard=True)])
            if turned:
                break
        spec = self.cards[use.card.name]
        if game.has_skills:
            yield from self._used_with_skills(game, spec, use)
        else:
            yield from spec.use(game, use)

    def use_as(self, game: Game, use: Use) -> Settle[None]:
        """A card its user is treated as using (视为使用: 神速's 杀), checked by the caller: the skills that react to
        a use, the targets' skills, then its settlement."""
        if game.mode.use_hook:
            game.mode.card_used(game, use.user, use.card.name, use.targets)
        return self._used_with_skills(game, self.cards[use.card.name], use)

    def _used_with_skills(self, game: Game, spec: CardSpec, use: Use) -> Settle[None]:
        """Skills that react to a card being used (集智); then, where any skill has that timing, each target's
        skills as it becomes a target ("target_confirming": a skill that cancels its owner as a target sets
        ``skip``; the card goes on without them); then the card's settlement."""
        yield from game.trigger("card_used", Trigger(use.user, card=use.card, use=use))
        if "target_confirming" in self.timings and use.targets:
            kept = []
            confirming = use.targets[:spec.confirmed_targets or len(use.targets)]
            for t in confirming:
                ctx = Trigger(t, source=use.user, card=use.card, use=use)
                yield from game.trigger_one(t, "target_confirming", ctx)
                if not ctx.skip:
                    kept.append(t)
            if len(kept) != len(confirming):
                use = Use(use.user, use.card, (*kept, *use.targets[len(confirming):]) if kept else (),
                          use.damage_bonus)
                if not kept:
                    yield from spec.cancelled(game, use)
                    return
        yield from spec.use(game, use)

    # ------------------------------------------------------------ responses

    def ask_for_card(self, game: Game, seat: int, names: frozenset[str], reason: str,
                     target: int | None = None, skills_off: frozenset[str] = frozenset(),
                     settle_now: bool = True) -> Settle[UsedCard | None]:
        """Ask ``seat`` to use or play a card named in ``names``; None if they decline.

        Equipment that can provide such a card without one (八卦阵) may be invoked first,
        once per request. The answering card is settled at once (to the discard pile)
        unless ``settle_now`` is False (the caller then settles it, e.g. a 杀 for 借刀杀人).
        """
        if not game.players[seat].alive:
            return None
        p = game.players[seat]
        effects = game.effects_of(seat) if not p.latent_skills else [*game.effects_of(seat), *p.latent_skills]
        offered = tuple(e.name for e in effects
                        if names & e.provides and e.name not in skills_off and e.can_provide(game, seat)
                        ) if effects else ()
        tried: set[str] = set()
        while True:
            skills = tuple(s for s in offered if s not in tried) if tried else offered
            answer = yield card_request(seat, names, reason, skills, target)
            if answer is None or answer is UNANSWERED:
                return None
            assert isinstance(answer, pb.Event)
            if answer.HasField("invoke_skill"):
                name = answer.invoke_skill.skill
                effect = next((e for e in game.effects_of(seat) if e.name == name), None)
                if effect is None or name not in offered or name in tried:
                    game.report([Violation("SKILL_NOT_AVAILABLE", f"seat {seat} cannot invoke {name!r} now "
                                           f"({reason})", seat, hard=True)])
                    continue
                tried.add(name)
                provided = yield from effect.provide(game, seat, reason)
                if provided is not None:
                    yield from self.answered(game, seat, provided, reason)
                    return provided
                continue
            card = self.resolve_card(game, seat, answer.respond.card, ("hand",))
            if card is None:
                continue
            if card.name not in names and not (card.name.endswith("slash") and "slash" in names):
                if game.report([Violation("WRONG_CARD", f"seat {seat} answered {reason} with "
                                          f"{game.used_card_label(card)}; it needs "
                                          f"{' or '.join(f'{card_name_zh(n)} ({n})' for n in sorted(names))}",
                                          seat, card.ids[0] if card.ids else None, hard=True)], can_carry_out=True):
                    continue
                # A server's record: the card was spent as the answer, and the server settled it as FreeKill does.
                # Against a 杀 the card is used for its own effect, and only a 闪's cancels the 杀: it answers
                # nothing, the request goes on as declined. Anywhere else (万箭齐发, 南蛮入侵, 决斗, 护驾's call, ...)
                # the reply is the answer, whatever the card.
                if reason == SLASH_JINK_REASON:
                    yield from game.to_processing(card.ids)
                    game.processing_to_discard(card.ids)
                    return None
            yield from game.to_processing(card.ids)
            if game.has_skills and card.name.endswith("slash") and seat == game.current \
                    and game.phase == pb.PHASE_PLAY:
                game.players[seat].turn_flags["slash_in_play"] = 1
            if settle_now:
                game.processing_to_discard(card.ids)
            yield from self.answered(game, seat, card, reason)
            return card

    def answered(self, game: Game, seat: int, card: UsedCard, reason: str) -> Settle[None]:
        """After ``seat`` used or played ``card`` when asked for it: their skills that react ("card_answered":
        雷击 after a 闪), where any skill of the game has that timing."""
        if "card_answered" in self.timings and game.players[seat].alive:
            yield from game.trigger_one(seat, "card_answered", Trigger(seat, card=card, reason=reason))

    def rescue_forbidden(self, game: Game, rescuer: int, dying: int) -> Effect | None:
        """The effect of a living character that forbids ``rescuer`` to save ``dying`` now (完杀), if any."""
        if not self.rescue_rules:
            return None
        for holder in game.alive_seats():
            for eff in game.effects_of(holder):
                if eff in self.rescue_rules and eff.forbids_rescue(game, holder, rescuer, dying):
                    return eff
        return None

    def rescue(self, game: Game, seat: int, dying: int, ev: pb.Event) -> Settle[None]:
        """A 桃 for a dying character (docs/rules.md#rescue)."""
        if not ev.HasField("respond"):
            game.report([Violation("WRONG_TIMING", f"seat {dying} is dying: seat {seat} can only answer with 桃",
                                   seat, hard=True)])
            return
        card = self.resolve_card(game, seat, ev.respond.card)
        if card is None:
            return
        forbidden = self.rescue_forbidden(game, seat, dying)
        if forbidden is not None:
            game.report([Violation("RESCUE_FORBIDDEN", f"seat {seat} cannot save dying seat {dying} now: "
                                   f"{forbidden.name} forbids it", seat, hard=True)])
            return
        rescuers = {"peach"} | ({"analeptic"} if seat == dying else set())
        if card.name not in rescuers:
            game.report([Violation("WRONG_CARD", f"seat {seat} tried to save dying seat {dying} with "
                                   f"{game.used_card_label(card)}; only 桃 (or 酒 on oneself) saves", seat,
                                   card.ids[0] if card.ids else None, hard=True)])
            return
        yield from game.to_processing(card.ids)
        amount = 1
        if game.has_skills and card.name == "peach":
            amount += sum(e.recover_bonus(game, dying, seat, card) for e in game.players[dying].skills)
        gained = game.recover(dying, amount)
        game.processing_to_discard(card.ids)
        yield from game.recovered(dying, gained)

    def play_nullification(self, game: Game, ev: pb.Event) -> Settle[bool]:
        """A 无懈可击 played into an open window; False (reported) if it cannot be."""
        if not ev.HasField("respond"):
            game.report([Violation("WRONG_TIMING", "only 无懈可击 can be played while a trick may be "
                                   "nullified", hard=True)])
            return False
        seat = ev.respond.seat
        if seat >= game.n:
            game.report([Violation("SEAT_OUT_OF_RANGE", f"seat {seat} is not at the table", hard=True)])
            return False
        if not game.players[seat].alive:
            game.report([Violation("DEAD_PLAYER", f"seat {seat} is dead", seat, hard=True)])
            return False
        card = self.resolve_card(game, seat, ev.respond.card)
        if card is None:
            return False
        if not name_matches(card.name, NULLIFICATION):
            game.report([Violation("WRONG_CARD", f"seat {seat} played {game.used_card_label(card)} where only "
                                   "无懈可击 can be played", seat, card.ids[0] if card.ids else None, hard=True)])
            return False
        yield from game.to_processing(card.ids)
        if game.has_skills:
            yield from game.trigger("card_used", Trigger(seat, card=card))
        game.processing_to_discard(card.ids)
        return True


def missing_skill(game: Game, seat: int, name: str) -> Violation | None:
    """Why ``seat`` cannot invoke the general's skill ``name`` they lack: LORD_SKILL for a lord skill
    of their own general while they are not the lord, SKILL_NOT_OWNED for any other skill; None when
    ``name`` is no skill of the game's packages (equipment and unknown names are judged elsewhere)."""
    if name in game.players[seat].idle_skills:
        return Violation("LORD_SKILL", f"seat {seat}'s {name} is a lord skill and works only while their general "
                         "is the lord", seat, hard=True)
    eff = game.ruleset.effects.get(name)
    if eff is not None and eff.is_skill:
        return Violation("SKILL_NOT_OWNED", f"seat {seat} ({game.players[seat].general or 'no general'}) does "
                         f"not have the skill {name}", seat, hard=True)
    return None


def borrowed_skill(game: Game, seat: int, name: str) -> Violation | None:
    """A general's active skill ``seat`` lacks, invoked in their play phase, carried out as the game that was
    played did (docs/log-format.md#taken-cards): the soft SKILL_NOT_OWNED to report, when the log's very next
    event (Game.evidence) is an outcome about ``seat`` — the skill's effect recorded (制衡's draw) — or their own
    triggered skill answering that effect before its outcome shows (制衡 discarding 陆逊's last hand card: 连营);
    None otherwise (the invocation is refused: SKILL_NOT_OWNED, hard)."""
    ev = game.evidence
    eff = game.ruleset.effects.get(name)
    if ev is None or eff is None or not eff.active:
        return None
    kind = ev.WhichOneof("kind")
    if kind == "invoke_skill":
        answering = game.ruleset.effects.get(ev.invoke_skill.skill)
        if ev.invoke_skill.seat != seat or answering is None or answering.active \
                or not game.has_effect(seat, ev.invoke_skill.skill):
            return None
        about = seat
    elif kind is None or kind in ("cards_moved", "reveal", "reshuffle", "game_over"):
        about = ev.cards_moved.from_seat if kind == "cards_moved" and ev.cards_moved.HasField("from_seat") else -1
    else:
        about = getattr(getattr(ev, kind), "seat", -1)
    if about != seat:
        return None
    missing = missing_skill(game, seat, name)
    if missing is None or missing.code != "SKILL_NOT_OWNED":
        return None
    return Violation(missing.code, f"{missing.message}; carried out: the log records its effect", seat)
