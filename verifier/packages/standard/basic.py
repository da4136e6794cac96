"""Basic cards: 杀, 闪, 桃 (docs/rules.md#basic-cards)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Color
from verifier.engine.effects import SLASH_JINK_REASON, CardSpec, Use
from verifier.engine.game import Game, Settle, Trigger, Violation
from verifier.packages.standard.package import PACKAGE

JINK = frozenset({"jink"})  # what a 杀's target is asked for
NATURES = {"slash": pb.DAMAGE_NATURE_NORMAL, "fire_slash": pb.DAMAGE_NATURE_FIRE,
           "thunder_slash": pb.DAMAGE_NATURE_THUNDER}


def max_slash_targets(game: Game, use: Use) -> int:
    """1, or more where an effect allows extra targets (方天画戟)."""
    return 1 + sum(e.extra_slash_targets(game, use) for e in game.effects_of(use.user))


def verify_slash_targets(game: Game, use: Use, check_range: bool = True) -> Iterator[Violation]:
    user = use.user
    if not use.targets or len(use.targets) > max_slash_targets(game, use) \
            or len(set(use.targets)) != len(use.targets):
        yield Violation("INVALID_TARGET", f"seat {user}'s 杀 names {len(use.targets)} target(s); it takes one "
                        f"(up to {max_slash_targets(game, use)} here)", user, hard=True)
        return
    for t in use.targets:
        if t == user:
            yield Violation("INVALID_TARGET", f"seat {user} cannot use 杀 on themself", user, hard=True)
            return
    if check_range and not any(e.unlimited_distance(game, user, "slash") for e in game.effects_of(user)):
        rng = game.attack_range(user)
        for t in use.targets:
            if game.distance(user, t) > rng:
                yield Violation("OUT_OF_RANGE", f"seat {t} is at distance {game.distance(user, t)} from seat "
                                f"{user}, beyond their attack range {rng}", user,
                                use.card.ids[0] if use.card.ids else None)


@PACKAGE.card
class Slash(CardSpec):
    """杀: one other character in attack range; at most one per play phase."""

    name = "slash"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        yield from verify_slash_targets(game, use)
        p = game.players[use.user]
        if game.ruleset.use_bans:
            user, name = use.user, use.card.name
            why = next((w for e in game.effects_of(user) if (w := e.forbids_use(game, user, name))), "")
            if why:
                yield Violation("SLASH_LIMIT", f"seat {use.user} cannot use {game.used_card_label(use.card)}: {why}",
                                use.user, use.card.ids[0] if use.card.ids else None, hard=True)
                return
        if p.slash_count >= 1 and not game.slash_limit_lifted(use.user):
            yield Violation("SLASH_LIMIT", f"seat {use.user} already used a 杀 in this play phase; "
                            f"{game.used_card_label(use.card)} is a second one without 诸葛连弩", use.user,
                            use.card.ids[0] if use.card.ids else None)

    def use(self, game: Game, use: Use) -> Settle[None]:
        game.players[use.user].slash_count += 1
        yield from game.to_processing(use.card.ids)
        yield from slash_effect(game, use, *use.targets)
        game.processing_to_discard(use.card.ids)

    def cancelled(self, game: Game, use: Use) -> Settle[None]:
        game.players[use.user].slash_count += 1  # (used all the same: it counts towards the limit)
        yield from CardSpec.cancelled(self, game, use)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if game.in_attack_range(user, t)]


@dataclass(slots=True)
class Aim:
    """One target of a 杀 once it is aimed: who it is now (流离 may have passed it on) and how many 闪 they
    need (0 after 铁骑, 2 against 无双)."""

    target: int
    jinks: int = 1


def slash_effect(game: Game, use: Use, *targets: int) -> Settle[None]:
    """A 杀 against its targets (docs/rules.md#multi-target-slash): it is aimed at every target first, in seat
    order from the user — each target's "become the target" skills (流离), then the user's "after
    targeting" skills and weapon (铁骑, 无双, 雌雄双股剑) —, and only then does each target's effect resolve
    (armor, 闪, damage), in the same order."""
    user = use.user
    order = sorted(targets, key=lambda t: (t - user) % game.n)
    aims = [Aim(t) for t in order if game.players[t].alive]
    contexts: list[Trigger | None] = [None] * len(aims)
    if game.has_skills:
        for i, aim in enumerate(aims):
            targeted = contexts[i] = Trigger(aim.target, source=user, use=use, target=aim.target)
            yield from game.trigger("slash_targeted", targeted)
            aim.target = targeted.target if targeted.target is not None else aim.target
    for aim, ctx in zip(aims, contexts, strict=True):
        if not game.players[aim.target].alive:
            continue
        if ctx is not None:
            yield from game.trigger_one(user, "slash_target_chosen", ctx)
            aim.jinks = 0 if ctx.no_jink else 1 + sum(e.extra_responses(game, user, "slash")
                                                       for e in game.players[user].skills)
        for eff in game.effects_of(user):
            yield from eff.on_slash_target(game, use, aim.target)
    for aim in aims:
        yield from slash_hits(game, use, aim)


def slash_hits(game: Game, use: Use, aim: Aim) -> Settle[None]:
    """One aimed target's effect: armor, 闪, then damage (equipment hooks decide), all on the current target."""
    user, target = use.user, aim.target
    if not game.players[target].alive:
        return
    ignores_armor = any(e.ignores_armor for e in game.effects_of(user))
    armor = [] if ignores_armor else [e for e in game.effects_of(target) if e.is_armor]
    if any(e.slash_has_no_effect(game, use) or e.card_has_no_effect(game, use, target) for e in armor):
        return
    armor_off = frozenset(e.name for e in game.effects_of(target) if e.is_armor and ignores_armor)
    jink = None
    for _ in range(aim.jinks):
        jink = yield from game.ruleset.ask_for_card(game, target, JINK, SLASH_JINK_REASON, skills_off=armor_off)
        if jink is None:
            break
    if jink is not None:
        if "slash_jinked" in game.ruleset.timings:
            # The user's skills after the 杀 was dodged (猛进), before its equipment's (贯石斧).
            yield from game.trigger_one(user, "slash_jinked", Trigger(target, source=user, use=use, target=target))
        forced = False
        for eff in game.effects_of(user):
            if not forced:
                forced = yield from eff.on_slash_jinked(game, use, target)
        if not forced:
            return
    prevented = False
    for eff in game.effects_of(user):
        if not prevented and game.players[target].alive:
            prevented = yield from eff.on_slash_hit(game, use, target)
    if prevented:
        return
    yield from game.damage(user, target, 1 + use.damage_bonus, NATURES.get(use.card.name, pb.DAMAGE_NATURE_NORMAL),
                           card=use.card, ignores_armor=ignores_armor)


@PACKAGE.card
class Jink(CardSpec):
    """闪: only in response (to 杀, or played against 万箭齐发)."""

    name = "jink"
    play_phase = False


@PACKAGE.card
class Peach(CardSpec):
    """桃: recover 1 in your play phase (only when wounded), or save a dying character."""

    name = "peach"

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return (user,)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if use.targets != (use.user,):
            yield Violation("INVALID_TARGET", f"seat {use.user} can use 桃 in the play phase only on themself",
                            use.user, hard=True)
            return
        p = game.players[use.user]
        if not p.wounded:
            yield Violation("PEACH_FULL_HP", f"seat {use.user} used {game.used_card_label(use.card)} at full HP "
                            f"({p.hp}/{p.max_hp})", use.user, use.card.ids[0] if use.card.ids else None)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        # Its target recovers: its user, unless a server's record carried out a 桃 aimed at another character.
        for t in use.targets:
            if game.players[t].alive:
                yield from game.recovered(t, game.recover(t, 1))


def is_black(use: Use) -> bool:
    return use.card.color == Color.BLACK
