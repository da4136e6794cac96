"""Self-play's base: the loop that plays a whole game through the engine into a complete log, the random
legal bot every mode's bot builds on, and the registers through which each mode's module
(clients/selfplay/<mode>.py) hands in its bot and its header.

The bot is a random legal policy drawn from its own seeded stream ("bots"), so a game is
a pure function of (seed, players, options). Declines are left implicit in the log;
every outcome is recorded (OUTCOME_RECORDING_COMPLETE). ``play`` runs the same loop with any bot
(clients/cheats/selfplay.py: one that cheats once and lets the engine carry the cheat out).
A new mode's self-play is a module that registers its bot (``register_bot``, under the name ``bot_kind`` gives
its headers) and its header (``register_header``), imported by clients/selfplay/__init__.py: nothing here changes.
A variant of identity mode registers its bot with the headers it plays (``register_bot(kind, plays=..., rank=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Ruleset, Use, UsedCard
from verifier.engine.game import Game, Outcome, Violation
from verifier.engine.requests import (
    Answer,
    CardRequest,
    ChanceRequest,
    ChoiceRequest,
    DiscardRequest,
    NullifyRequest,
    OfferRequest,
    PeachRequest,
    PlayRequest,
    Request,
    ShuffleRequest,
    name_matches,
)
from verifier.pairing import mismatch
from verifier.replay import default_ruleset
from verifier.rng import Stream, shuffled
from verifier.setup import new_game, starting_hand_outcomes

MAX_DECISIONS = 20_000


class BotError(RuntimeError):
    """A bot made a move the engine rejected: a bug in the bot or the engine."""


class RandomBot:
    """Chooses uniformly among legal options, with a bias towards acting."""

    def __init__(self, rng: Stream) -> None:
        self.rng = rng

    def chance(self, percent: int) -> bool:
        return self.rng.below(100) < percent

    def pick(self, items: list[object]) -> object:
        return items[self.rng.below(len(items))]

    def decide(self, game: Game, req: Request) -> pb.Event | None:
        if isinstance(req, PlayRequest):
            return self.play(game, req)
        if isinstance(req, CardRequest):
            return self.respond(game, req)
        if isinstance(req, NullifyRequest):
            return self.nullify(game, req)
        if isinstance(req, PeachRequest):
            return self.rescue(game, req)
        if isinstance(req, DiscardRequest):
            assert req.seat is not None
            if req.count == 0:
                return None  # nothing due: no voluntary discard
            hand = list(game.players[req.seat].hand)
            self.rng.shuffle(hand)
            ev = pb.Event()
            ev.choose_cards.seat = req.seat
            ev.choose_cards.cards.extend(hand[:req.count])
            return ev
        if isinstance(req, ChoiceRequest):
            if req.optional and self.chance(40):
                return None
            opts = list(req.options)
            self.rng.shuffle(opts)
            ev = pb.Event()
            ev.choose_cards.seat = req.seat or 0
            ev.choose_cards.cards.extend(opts[:req.count])
            return ev
        if isinstance(req, OfferRequest):
            return self.offer(game, req)
        raise BotError(f"no policy for {req!r}")

    # ---------------------------------------------------------------- play phase

    def play(self, game: Game, req: PlayRequest) -> pb.Event:
        seat = req.seat
        assert seat is not None
        ruleset = game.ruleset
        options: list[tuple[pb.CardRef, tuple[int, ...]]] = []
        recasts: list[int] = []
        p = game.players[seat]
        for cid in p.hand:
            card = game.cards[cid]
            spec = ruleset.cards.get(card.name)
            if spec is None or not spec.play_phase:
                continue
            used = UsedCard(card.name, (cid,), card.suit, card.color, card.number, real=card)
            for targets in spec.candidate_targets(game, seat):
                use = Use(seat, used, targets or spec.default_targets(game, seat))
                if spec.can_use(game, use):
                    options.append((pb.CardRef(id=cid), targets))
            if spec.recastable:
                recasts.append(cid)
        if game.has_effect(seat, "fan") and self.chance(50):
            # 朱雀羽扇: an ordinary 杀 used as a 火杀.
            for cid in [c for c in p.hand if game.cards[c].name == "slash"][:1]:
                ref = pb.CardRef()
                ref.virtual.name = "fire_slash"
                ref.virtual.skill = "fan"
                ref.virtual.subcards.append(cid)
                card = game.cards[cid]
                spec = ruleset.cards["fire_slash"]
                used = UsedCard("fire_slash", (cid,), card.suit, card.color, card.number, skill="fan")
                for targets in spec.candidate_targets(game, seat):
                    if spec.can_use(game, Use(seat, used, targets)):
                        options.append((ref, targets))
        if game.has_effect(seat, "spear") and len(p.hand) >= 2 and self.chance(30):
            a, b = p.hand[self.rng.below(len(p.hand))], p.hand[self.rng.below(len(p.hand))]
            if a != b:
                ref = pb.CardRef()
                ref.virtual.name = "slash"
                ref.virtual.skill = "spear"
                ref.virtual.subcards.extend([a, b])
                spec = ruleset.cards["slash"]
                used = UsedCard("slash", (a, b), game.cards[a].suit, game.cards[a].color, 0, skill="spear")
                for targets in spec.candidate_targets(game, seat):
                    if spec.can_use(game, Use(seat, used, targets)):
                        options.append((ref, targets))
        ev = pb.Event()
        if recasts and self.chance(10):
            ev.use_card.seat = seat
            ev.use_card.card.id = recasts[0]
            ev.use_card.recast = True
            return ev
        if not options or self.chance(12):
            ev.end_play_phase.seat = seat
            return ev
        ref, targets = options[self.rng.below(len(options))]
        ev.use_card.seat = seat
        ev.use_card.card.CopyFrom(ref)
        ev.use_card.targets.extend(targets)
        return ev

    # ---------------------------------------------------------------- responses

    def respond(self, game: Game, req: CardRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        if req.skills and self.chance(70):
            ev = pb.Event()
            ev.invoke_skill.seat = seat
            ev.invoke_skill.skill = req.skills[0]
            return ev
        matching = [c for c in game.players[seat].hand if name_matches(game.cards[c].name, req.names)]
        if matching and self.chance(80):
            ev = pb.Event()
            ev.respond.seat = seat
            ev.respond.card.id = matching[self.rng.below(len(matching))]
            return ev
        return None

    def nullify(self, game: Game, req: NullifyRequest) -> pb.Event | None:
        for seat in game.alive_seats(game.current):
            held = [c for c in game.players[seat].hand if game.cards[c].name == "nullification"]
            if held and self.chance(30):
                ev = pb.Event()
                ev.respond.seat = seat
                ev.respond.card.id = held[0]
                if req.target is not None:
                    ev.respond.target = req.target
                if req.card is not None:
                    # A window for a delayed trick being judged: name the trick, so that a 无懈可击 on the
                    # second of two delayed tricks in one judgment area (same target) is not read as one
                    # continuing the chain on the first (Respond.trick_card).
                    ev.respond.trick_card = req.card
                return ev
        return None

    def rescue(self, game: Game, req: PeachRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        saving = {"peach", "analeptic"} if seat == req.dying else {"peach"}  # 酒 saves only its user
        peaches = [c for c in game.players[seat].hand if game.cards[c].name in saving]
        if peaches and self.chance(85 if seat == req.dying else 40):
            ev = pb.Event()
            ev.respond.seat = seat
            ev.respond.card.id = peaches[0]
            ev.respond.target = req.dying
            return ev
        return None

    def offer(self, game: Game, req: OfferRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        if not self.chance(60):
            return None
        p = game.players[seat]
        ev = pb.Event()
        if req.names:
            matching = [c for c in p.hand if name_matches(game.cards[c].name, req.names)]
            if not matching:
                return None
            ev.respond.seat = seat
            ev.respond.card.id = matching[0]
            return ev
        ev.invoke_skill.seat = seat
        ev.invoke_skill.skill = req.skill
        if req.skill == "axe":
            cost = [c for c in [*p.hand, *p.equipped()] if c != p.equips.get("weapon")]
            if len(cost) < 2:
                return None
            ev.invoke_skill.cards.extend(cost[:2])
        elif req.skill == "kylin_bow":
            assert req.target is not None
            t = game.players[req.target]
            horses = [t.equips[s] for s in ("defensive_horse", "offensive_horse") if s in t.equips]
            ev.invoke_skill.cards.append(horses[0])
        return ev


# A mode's self-play header: (seed, players, role_variant, packages, generals, rebirth), the last four being the
# identity options that a mode without them ignores.
HeaderMaker = Callable[[int, int, int, Sequence[str], bool, bool], pb.GameHeader]
BotMaker = Callable[[Stream], RandomBot]
B = TypeVar("B", bound=BotMaker)
H = TypeVar("H", bound=HeaderMaker)

# Filled by the modes' modules as they are imported (clients/selfplay/__init__.py imports them all).
BOTS: dict[str, BotMaker] = {}
HEADERS: dict[int, HeaderMaker] = {}


# Identity mode's variants whose games need a bot of their own: (rank, kind, the headers it plays), the highest
# rank first — the variant that needs the most of a bot wins where several apply.
VARIANTS: list[tuple[int, str, Callable[[pb.GameHeader], bool]]] = []


def register_bot(kind: str, plays: Callable[[pb.GameHeader], bool] | None = None, rank: int = 0
                 ) -> Callable[[B], B]:
    """Class decorator: the bot of the games whose ``bot_kind`` is ``kind`` — a mode's name, or an identity
    variant's, with ``plays`` saying which identity headers are the variant's (``rank`` above the others it may
    meet: a bot that needs more of a bot ranks higher)."""
    def register(bot: B) -> B:
        BOTS[kind] = bot
        if plays is not None:
            VARIANTS.append((rank, kind, plays))
            VARIANTS.sort(key=lambda variant: (-variant[0], variant[1]))
        return bot
    return register


def register_header(mode: int) -> Callable[[H], H]:
    """Function decorator: the header of the self-play games of ``mode`` (a pb.Mode value)."""
    def register(maker: H) -> H:
        HEADERS[mode] = maker
        return maker
    return register


def bot_kind(header: pb.GameHeader) -> str:
    """The name the bot of this game is registered under: the mode's own name ("hegemony" for MODE_HEGEMONY),
    and in identity mode the registered variant of the highest rank that plays it (rebirth, dark souls, the
    standard generals: VARIANTS), or "identity" (the white generals)."""
    if header.mode != pb.MODE_IDENTITY:
        return pb.Mode.Name(header.mode).removeprefix("MODE_").lower()
    return next((kind for _, kind, plays in VARIANTS if plays(header)), "identity")


def make_bot(header: pb.GameHeader) -> RandomBot:
    """The self-play bot of the game ``header`` starts: random legal play from the stream "bots" of its seed (with
    generals, one that picks generals and uses their skills; in hegemony mode, one that also reveals them; with
    rebirth, one that also sacrifices to the dead)."""
    kind = bot_kind(header)
    if kind not in BOTS:
        raise BotError(f"no self-play bot for {kind!r} games (known: {', '.join(sorted(BOTS))})")
    return BOTS[kind](Stream(header.seed, "bots"))


class Bot(Protocol):
    """Whatever makes the decisions of a self-play game: an event, None to decline (left implicit in
    the log), or UNANSWERED to leave a mandatory request with a default unanswered."""

    def decide(self, game: Game, req: Request) -> Answer: ...


# Told of the violations the engine reported on a decision, and the log index where verification must
# report them: the decision's own index, or for UNANSWERED the index of the event that follows it (the
# verifier puts a derived annotation there).
Flagged = Callable[[int, list[Violation]], None]


def play_game(seed: int, players: int, role_variant: int = pb.ROLE_VARIANT_STANDARD,
              ruleset: Ruleset | None = None, packages: Sequence[str] = (), generals: bool = False,
              mode: int = pb.MODE_IDENTITY, rebirth: bool = False) -> pb.GameLog:
    """One complete self-play game as a log with every outcome recorded; ``packages`` as in the header
    (("maneuvering",) for the 160-card deck); ``mode`` MODE_HEGEMONY for 国战 (its deck and generals)."""
    if mode not in HEADERS:
        raise BotError(f"no self-play for mode {mode}")
    header = HEADERS[mode](seed, players, role_variant, packages, generals, rebirth)
    return play(header, make_bot(header), ruleset)


# Answers the engine's chance (a draw, a judgment) where a bot cheats with it: the cards to take instead of
# the top ones, or None for the rules' own.
Chance = Callable[[Game, ChanceRequest], Answer]


def play(header: pb.GameHeader, bot: Bot, ruleset: Ruleset | None = None, flagged: Flagged | None = None,
         chance: Chance | None = None) -> pb.GameLog:
    """Play the game ``header`` starts through the engine with ``bot`` deciding everything. Anything the
    engine flags is a BotError, unless ``flagged`` is given: then it is told, and the game goes on as the
    engine carried on (what a verifier would do with the same decisions). With ``chance``, draws and
    judgments are asked of it (Game.adopting): an outcome it changes is taken into the game as the
    verifier adopts a recorded one, and told to ``flagged`` at its own event with its code."""
    seed = header.seed
    game = new_game(header, ruleset or default_ruleset(header))
    game.adopting = chance is not None
    log = pb.GameLog(header=header)
    log.events.extend(starting_hand_outcomes(game))
    gen = game.run()
    req: Request | None = next(gen)
    decisions = 0
    at = 0  # where the last decision's violations must be reported
    while True:
        for o in game.outcomes:
            if o.rule is not None:  # (only a changed chance gives one here: the rules give o.rule)
                if flagged is None:
                    raise BotError(f"seed {seed}: an outcome differs from the rules' own: {o.event}")
                kind = o.event.WhichOneof("kind")
                assert kind is not None
                flagged(len(log.events), [mismatch(Outcome(o.rule, o.code), o.event, kind)])
            log.events.append(o.event)
        game.outcomes.clear()
        if game.violations:
            if flagged is None:
                raise BotError(f"seed {seed}: the engine flagged a bot decision: {game.violations}")
            violations, game.violations, game.rejected = game.violations, [], False
            flagged(at, violations)
        if req is None:
            break
        if isinstance(req, ShuffleRequest):
            answer: Answer = shuffled(game.seed, req.label, list(req.cards))
        elif isinstance(req, ChanceRequest):
            answer = chance(game, req) if chance is not None else None
        else:
            decisions += 1
            if decisions > MAX_DECISIONS:
                raise BotError(f"seed {seed}: no end after {MAX_DECISIONS} decisions")
            answer = bot.decide(game, req)
            at = len(log.events)
            if isinstance(answer, pb.Event):
                log.events.append(answer)
                if answer.HasField("decline"):
                    answer = None  # an explicit decline reaches the engine as a decline, as in replay
        try:
            req = gen.send(answer)
        except StopIteration:
            req = None
    record_scores(game, log)
    return log


def record_scores(game: Game, log: pb.GameLog) -> None:
    """Record the rules' scores in the log's GameOver (docs/log-format.md#scores), as a scoring client would:
    every scored self-play game then has its scores checked too."""
    if game.result is None or not game.result.scores:
        return
    for ev in reversed(log.events):
        if ev.HasField("game_over"):
            ev.game_over.scores.extend(s.score for s in game.result.scores)
            return
