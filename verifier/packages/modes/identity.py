"""Identity mode (身份局) as a package: the role table and the roles' deal, the lord's HP bonus, the
generals' picks (the lord first), the kill rewards and penalties, the victory conditions and the
seat's allegiance (its role's side). verifier/setup.py starts a game here for MODE_IDENTITY headers.
"""

from __future__ import annotations

from collections.abc import Sequence

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, load_package
from verifier.engine.effects import Package, Ruleset
from verifier.engine.game import Game, GameEnded, Notice, Player, Settle, Violation
from verifier.engine.mode import Mode
from verifier.engine.requests import pick_request
from verifier.generals import LORD_CANDIDATES, standard_generals
from verifier.packages.modes import scoring
from verifier.rng import MASK64, shuffled
from verifier.setup import HeaderError, check_ruleset, deal_cards

RULESET = "identity/1"
MIN_PLAYERS, MAX_PLAYERS = 4, 10

LORD, LOYALIST, REBEL, SPY = pb.ROLE_LORD, pb.ROLE_LOYALIST, pb.ROLE_REBEL, pb.ROLE_SPY
ROLE_NAMES = {LORD: "lord", LOYALIST: "loyalist", REBEL: "rebel", SPY: "spy"}
SIDES: dict[int, str] = {LORD: "lord", LOYALIST: "lord", REBEL: "rebels", SPY: "spy"}

# The card packages an identity header may ask for (options.packages); "standard" is always in.
PACKAGES = frozenset({"standard", "maneuvering"})

# docs/rules.md#role-table: (loyalists, rebels, spies) by player count; the lord is always one.
ROLE_TABLE = {4: (1, 1, 1), 5: (1, 2, 1), 6: (1, 3, 1), 7: (2, 3, 1), 8: (2, 4, 1), 9: (3, 4, 1), 10: (3, 4, 2)}
TWO_SPIES_VARIANT = {6: (1, 2, 2), 8: (2, 3, 2)}

def role_list(players: int, variant: int) -> list[int]:
    """The roles to deal, in a fixed order: lord, loyalists, rebels, spies."""
    loyal, rebel, spy = ROLE_TABLE[players]
    if variant == pb.ROLE_VARIANT_TWO_SPIES:
        if players not in TWO_SPIES_VARIANT:
            raise HeaderError([Violation("BAD_HEADER", f"the two-spy role variant exists only for 6 and 8 "
                                         f"players, not {players}")])
        loyal, rebel, spy = TWO_SPIES_VARIANT[players]
    return [int(LORD)] + [int(LOYALIST)] * loyal + [int(REBEL)] * rebel + [int(SPY)] * spy


def counts_text(loyal: int, rebel: int, spy: int, lords: int = 1) -> str:
    """E.g. "1 lord, 3 loyalists, 5 rebels, 1 spy"."""
    def one(k: int, name: str, plural: str) -> str:
        return f"{k} {name if k == 1 else plural}"
    return ", ".join((one(lords, "lord", "lords"), one(loyal, "loyalist", "loyalists"),
                      one(rebel, "rebel", "rebels"), one(spy, "spy", "spies")))


def role_counts(roles: Sequence[int]) -> str:
    """The counts of a list of roles, e.g. "1 lord, 3 loyalists, 5 rebels, 1 spy" (other values
    than the four roles are not counted)."""
    return counts_text(roles.count(LOYALIST), roles.count(REBEL), roles.count(SPY), roles.count(LORD))


def rule_book_tables(players: int) -> list[tuple[int, int, int]]:
    """The role tables of the rule book (docs/rules.md#role-table) for ``players`` as (loyalists, rebels,
    spies): the standard one, and the two-spy variant for 6 and 8 players."""
    tables = [ROLE_TABLE[players]]
    if players in TWO_SPIES_VARIANT:
        tables.append(TWO_SPIES_VARIANT[players])
    return tables


def declared_table(header: pb.GameHeader) -> tuple[tuple[int, int, int], list[Notice]]:
    """The header's declared role table (options.role_table, which must be set) as (loyalists,
    rebels, spies), checked; with the HOUSE_ROLE_TABLE notice when it is none of the rule book's
    tables for the player count. Raises HeaderError (BAD_ROLES) for an impossible table, or one
    given together with a role_variant (two ways of saying which table: contradictory)."""
    t = header.options.role_table
    n = len(header.seats)
    counts = {"lords": t.lords, "loyalists": t.loyalists, "rebels": t.rebels, "spies": t.spies}
    problems = []
    variant = header.options.role_variant
    if variant not in (pb.ROLE_VARIANT_UNSPECIFIED, pb.ROLE_VARIANT_STANDARD):
        name = pb.RoleVariant.Name(variant) if variant in pb.RoleVariant.values() else str(variant)
        problems.append(f"it is given together with options.role_variant {name}: the header must say which "
                        "role table is used in one way only")
    negative = [f"{k} {v}" for k, v in counts.items() if v < 0]
    absurd = [f"{k} {v}" for k, v in counts.items() if v > MAX_PLAYERS]
    if negative:
        problems.append(f"a count cannot be negative ({', '.join(negative)})")
    if absurd:
        problems.append(f"no count can exceed {MAX_PLAYERS}, the most seats a table has ({', '.join(absurd)})")
    if t.lords != 1:
        problems.append(f"a game has exactly one lord, not {t.lords}")
    total = sum(counts.values())
    if total != n:
        problems.append(f"its counts add up to {total}, not to the {n} seats")
    if t.rebels == 0 and t.spies == 0:
        problems.append("it has no rebel and no spy, so nobody plays against the lord and the game could never "
                        "end")
    if problems:
        shown = ", ".join(f"{k} {v}" for k, v in counts.items())
        raise HeaderError([Violation("BAD_ROLES", f"the declared role table (options.role_table: {shown}) cannot "
                                     "be used: " + "; ".join(problems))])
    table = (t.loyalists, t.rebels, t.spies)
    notices = []
    if table not in rule_book_tables(n):
        book = counts_text(*ROLE_TABLE[n])
        if n in TWO_SPIES_VARIANT:
            book += f" (or {counts_text(*TWO_SPIES_VARIANT[n])} with the two-spy variant)"
        notices.append(Notice("HOUSE_ROLE_TABLE", f"the header declares the house role table {counts_text(*table)} "
                              f"for {n} players, where the rule book's (docs/rules.md#role-table) is {book}; "
                              "the game is judged by the declared table"))
    return table, notices


def roles_to_deal(header: pb.GameHeader) -> tuple[list[int], list[Notice]]:
    """The roles the game deals, in a fixed order (lord, loyalists, rebels, spies): by the declared
    role table when the header has one, else by the rule book's table for the player count and
    variant. With the notices the table gives (HOUSE_ROLE_TABLE). Raises HeaderError."""
    n = len(header.seats)
    if not header.options.HasField("role_table"):
        return role_list(n, header.options.role_variant), []
    (loyal, rebel, spy), notices = declared_table(header)
    return [int(LORD)] + [int(LOYALIST)] * loyal + [int(REBEL)] * rebel + [int(SPY)] * spy, notices


def packages(header: pb.GameHeader) -> list[Package]:
    """The rules an identity game plays with: the standard cards, the 军争 cards when the header asks for them,
    the standard generals' skills with generals."""
    from verifier.packages import standard  # the set-up assembles packages; the core never does

    found = [standard.PACKAGE]
    if "maneuvering" in header.options.packages:
        from verifier.packages import maneuvering  # 军争: extends the standard 杀

        found.append(maneuvering.PACKAGE)
    if header.options.generals == pb.GENERALS_MODE_STANDARD:
        from verifier.packages import generals_standard

        found.append(generals_standard.PACKAGE)
    return found


def header_notices(header: pb.GameHeader) -> list[Notice]:
    """The notices on a header the game starts from (``new_game`` did not raise)."""
    return roles_to_deal(header)[1]





def deck_for(header: pb.GameHeader) -> list[CardDef]:
    """The standard 108 cards, plus the 52 军争 cards (ids 109-160) when the header asks for them."""
    deck = list(load_package("standard"))
    if "maneuvering" in header.options.packages:
        deck.extend(load_package("maneuvering"))
    return deck


def check_header(header: pb.GameHeader) -> None:
    """Identity mode's header: 4-10 seats, the generals mode, the card packages, the seats' generals."""
    problems = check_ruleset(header, RULESET)
    n = len(header.seats)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        problems.append(Violation("BAD_HEADER", f"identity mode needs 4 to 10 seats, not {n}"))
    opts = header.options
    if opts.generals == pb.GENERALS_MODE_UNSPECIFIED:
        problems.append(Violation("BAD_HEADER", "options.generals must say how generals are assigned "
                                  "(GENERALS_MODE_WHITE for no generals)"))
    elif opts.generals not in (pb.GENERALS_MODE_WHITE, pb.GENERALS_MODE_STANDARD):
        problems.append(Violation("UNSUPPORTED_OPTION", f"unknown generals mode {opts.generals}"))
    for pkg in opts.packages:
        if pkg not in PACKAGES:
            problems.append(Violation("UNSUPPORTED_OPTION", f"unknown card package {pkg!r}"))
    if opts.rebirth and opts.generals != pb.GENERALS_MODE_STANDARD:
        problems.append(Violation("UNSUPPORTED_OPTION", "options.rebirth needs the standard generals "
                                  "(GENERALS_MODE_STANDARD): a reborn character turns a general "
                                  "(docs/rules.md#rebirth, R-8)"))
    from verifier.packages.modes import house_rules  # (it imports this module: imported once this one is loaded)

    problems.extend(house_rules.check_options(header))
    if opts.generals == pb.GENERALS_MODE_STANDARD:
        problems.extend(check_generals(header))
    else:
        for i, seat in enumerate(header.seats):
            if seat.general:
                problems.append(Violation("BAD_HEADER", f"seat {i} names a general in white-general mode", i))
    if problems:
        raise HeaderError(problems)


def check_generals(header: pb.GameHeader) -> list[Violation]:
    """With standard generals: either every seat names a known general (each once) or none does;
    the gender comes from the general."""
    known = standard_generals()
    out: list[Violation] = []
    named = [s.general for s in header.seats]
    if any(named) and not all(named):
        out.append(Violation("BAD_HEADER", "either every seat names its general or none does (then they are "
                             "picked)"))
    for i, seat in enumerate(header.seats):
        if seat.general and seat.general not in known:
            out.append(Violation("BAD_HEADER", f"seat {i} names {seat.general!r}, which is not a standard general",
                                 i))
        if seat.gender:
            out.append(Violation("BAD_HEADER", f"seat {i} sets a gender; with generals it comes from the general",
                                 i))
    given = [g for g in named if g]
    if len(set(given)) != len(given):
        out.append(Violation("BAD_HEADER", "a general is named for two seats"))
    return out


def lord_candidates(seed: int) -> tuple[str, ...]:
    """docs/rules.md#generals: 曹操, 刘备, 孙权 and the first 2 of the other generals shuffled by the "generals"
    stream (docs/rng.md)."""
    others = [g for g in standard_generals() if g not in LORD_CANDIDATES]
    return (*LORD_CANDIDATES, *shuffled(seed, "generals", others)[:2])


def other_candidates(seed: int, lord_seat: int, lord_pick: str, n: int) -> dict[int, tuple[str, ...]]:
    """Every general but the lord's, shuffled by the "generals/others" stream, dealt 3 each (2 with 10
    players) to the other seats in turn order from the lord's next seat."""
    rest = shuffled(seed, "generals/others", [g for g in standard_generals() if g != lord_pick])
    each = 2 if n == 10 else 3
    seats = [(lord_seat + i) % n for i in range(1, n)]
    return {seat: tuple(rest[each * k:each * (k + 1)]) for k, seat in enumerate(seats)}


def assign_general(game: Game, seat: int, name: str) -> None:
    """Give ``seat`` its general: max HP (+1 for the lord with 5 or more players, docs/rules.md#max-hp),
    gender, kingdom and skills (lord skills only for the lord)."""
    g = standard_generals()[name]
    p = game.players[seat]
    lord = p.role == LORD
    p.general, p.kingdom, p.gender = g.name, g.kingdom, g.gender
    p.max_hp = p.hp = g.max_hp + (1 if lord and game.n >= 5 else 0)
    p.skills = [game.ruleset.effects[s] for s in g.skill_names(lord) if s in game.ruleset.effects]
    p.idle_skills = () if lord else g.lord_skills()
    p.watch_hand = any("lost_hand" in e.timings for e in p.skills)
    p.watch_equip = any("lost_equip" in e.timings for e in p.skills)
    game.has_skills = game.has_skills or bool(p.skills)
    game.forget_effects(seat)
    game.journal.append(f"('general', {seat}, {name!r})")


def pick_generals(game: Game) -> Settle[None]:
    """docs/rules.md#generals: the lord picks from 5 candidates, then each other seat in turn order from 3 (2)."""
    lord = next(p.seat for p in game.players if p.role == LORD)
    game.selection = {lord: lord_candidates(game.seed)}
    pick = yield from pick_one(game, lord)
    game.selection.update(other_candidates(game.seed, lord, pick, game.n))
    for k in range(1, game.n):
        yield from pick_one(game, (lord + k) % game.n)
    game.selection = None


def pick_one(game: Game, seat: int) -> Settle[str]:
    assert game.selection is not None
    candidates = game.selection[seat]
    while True:
        answer = yield pick_request(seat, candidates)
        assert isinstance(answer, pb.Event)
        name = answer.pick_general.general
        if name in candidates:
            assign_general(game, seat, name)
            return name
        game.report([Violation("GENERAL_NOT_OFFERED", f"seat {seat} picked {name!r}; the candidates are "
                               f"{', '.join(candidates)}", seat, hard=True)])


def deal_roles(header: pb.GameHeader) -> list[int]:
    """The seats' roles: as the header states them (checked against the table), else dealt from the
    seed's "roles" stream. Raises HeaderError (BAD_ROLES)."""
    n = len(header.seats)
    seed = header.seed & MASK64
    roles_given = [s.role for s in header.seats]
    wanted, _ = roles_to_deal(header)
    if any(roles_given):
        if not all(roles_given):
            raise HeaderError([Violation("BAD_ROLES", "either every seat states its role or none does")])
        if sorted(roles_given) != sorted(wanted):
            if header.options.HasField("role_table"):
                raise HeaderError([Violation("BAD_ROLES", f"the seats' roles ({role_counts(roles_given)}) do not "
                                             f"match the declared role table ({role_counts(wanted)})")])
            raise HeaderError([Violation("BAD_ROLES", f"the roles {sorted(roles_given)} do not match the role "
                                         f"table for {n} players ({sorted(wanted)})")])
        roles = [int(r) for r in roles_given]
    else:
        roles = shuffled(seed, "roles", wanted)
    return roles


def new_game(header: pb.GameHeader, ruleset: Ruleset) -> Game:
    """An identity-mode game in its starting position. Raises HeaderError for an unusable header."""
    check_header(header)
    deck = deck_for(header)
    roles = deal_roles(header)
    hands, pile = deal_cards(header, deck)
    n = len(header.seats)
    players = []
    for seat in range(n):
        max_hp = 4 + (1 if roles[seat] == LORD and n >= 5 else 0)
        p = Player(seat, roles[seat], max_hp, max_hp, gender=header.seats[seat].gender)
        p.hand = list(hands[seat])
        players.append(p)
    standard = header.options.generals == pb.GENERALS_MODE_STANDARD
    fixed = standard and all(s.general for s in header.seats)
    game = Game(mode=identity_mode(header), ruleset=ruleset, cards={c.id: c for c in deck}, players=players,
                draw_pile_top_first=pile, seed=header.seed & MASK64,
                max_reshuffles=header.options.max_reshuffles,
                prelude=pick_generals if standard and not fixed else None)
    if fixed:
        for seat in range(n):
            assign_general(game, seat, header.seats[seat].general)
    return game


def identity_mode(header: pb.GameHeader) -> IdentityMode:
    """The mode object of an identity game: the rebirth variant's (its own module) when the header asks for it,
    seed 003's house rules' (house_rules.py) when it enables any."""
    from verifier.packages.modes import house_rules

    mode = house_rules.house_mode(header.options)
    if mode is not None:
        return mode
    if header.options.rebirth:
        from verifier.packages.modes.rebirth import RebirthMode

        return RebirthMode()
    return IdentityMode()


class IdentityMode(Mode):
    """The identity mode's rules as the core asks for them."""

    name = "identity"
    ruleset = RULESET

    def first_seat(self, game: Game) -> int:
        """The lord has the first turn."""
        return next(p.seat for p in game.players if p.role == LORD)

    def fill_death(self, game: Game, seat: int, death: pb.Death) -> None:
        death.role = game.players[seat].role  # type: ignore[assignment]
        scoring.note_death(game, seat, death.killer if death.HasField("killer") else None, self.is_reborn(seat))

    def final_scores(self, game: Game, end: GameEnded) -> tuple[scoring.Score, ...]:
        """docs/rules.md#scoring: the living counts are of the characters alive for victory (a reborn one is not)."""
        return scoring.final_scores(game, end, lambda seat: self.alive_for_victory(game, seat))

    def is_reborn(self, seat: int) -> bool:
        """Is the seat a reborn character? Never, but in the rebirth variant (RebirthMode)."""
        return False

    def reward_or_penalty(self, game: Game, victim: int, killer: int | None) -> Settle[None]:
        """docs/rules.md#kill-reward, docs/rules.md#kill-penalty."""
        if killer is None or killer == victim or not game.players[killer].alive:
            return
        v = game.players[victim]
        k = game.players[killer]
        if v.role == REBEL:
            yield from game.draw(killer, 3, pb.DRAW_REASON_KILL_REWARD, "KILL_REWARD")
        elif v.role == LOYALIST and k.role == LORD:
            yield from game.move_out(killer, list(k.hand), pb.ZONE_HAND, pb.MOVE_REASON_KILL_PENALTY,
                                     "KILL_PENALTY")
            yield from game.move_out(killer, k.equipped(), pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY,
                                     "KILL_PENALTY")

    def check_victory(self, game: Game, just_died: int | None) -> None:
        """docs/rules.md#victory."""
        players = game.players
        lord = next(p for p in players if p.role == LORD)
        if not lord.alive:
            alive = [p for p in players if self.alive_for_victory(game, p.seat)]
            if len(alive) == 1 and alive[0].role == SPY:
                raise GameEnded(pb.SIDE_SPY, [alive[0].seat], f"the lord died; spy seat {alive[0].seat} is the "
                                "sole survivor")
            rebels = [p.seat for p in players if p.role == REBEL]
            if not rebels:  # only with a declared house role table (options.role_table) without rebels
                raise GameEnded(pb.SIDE_REBELS, [], "the lord died: the rebels win, and this table has none, so "
                                "nobody does")
            raise GameEnded(pb.SIDE_REBELS, rebels, "the lord died: the rebels win")
        if not any(p.role in (REBEL, SPY) and self.alive_for_victory(game, p.seat) for p in players):
            winners = [p.seat for p in players if p.role in (LORD, LOYALIST)]
            raise GameEnded(pb.SIDE_LORD, winners, "all rebels and spies are dead: the lord's side wins")

    def alive_for_victory(self, game: Game, seat: int) -> bool:
        """Does the seat count as alive when victory is judged? (The rebirth variant: not when reborn.)"""
        return game.players[seat].alive

    def allegiance(self, game: Game, seat: int) -> str:
        """The side of the seat's role: "lord" (lord and loyalists), "rebels" or "spy". Each spy plays for
        themselves, so two spies are not of one side (same_side)."""
        return SIDES.get(game.players[seat].role, "")

    def same_side(self, game: Game, a: int, b: int) -> bool:
        side = self.allegiance(game, a)
        return a == b or (side not in ("", "spy") and side == self.allegiance(game, b))
