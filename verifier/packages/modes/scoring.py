"""Identity mode's fourth-edition scoring (评分规则, docs/rules.md#scoring): each seat's score when a
game ends, from the role table below, the living counts, the personal bonuses for kills and the spy's
final one-on-one with the lord.

The table is data: one ``Cell`` per (role, winning side) says how the score is made of the base, the
player count N, the living loyalists and rebels, and a condition. The engine never keeps scores in its
state (the digest does not see them): the mode asks ``final_scores`` once, when the game ends, and the
result is carried by ``GameEnded.scores`` into the annotated replay's GameResult.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sgsverify.v1 import game_log_pb2 as pb

if TYPE_CHECKING:
    from verifier.engine.game import Game, GameEnded

LORD, LOYALIST, REBEL, SPY = pb.ROLE_LORD, pb.ROLE_LOYALIST, pb.ROLE_REBEL, pb.ROLE_SPY
ROLE_NAMES: dict[int, str] = {LORD: "lord", LOYALIST: "loyalist", REBEL: "rebel", SPY: "spy"}
SIDE_NAMES: dict[int, str] = {pb.SIDE_LORD: "the lord's side won", pb.SIDE_REBELS: "the rebels won",
                              pb.SIDE_SPY: "the spy won"}

# Game.package_state: the deaths in order, (victim, killer or None, whether the victim was a reborn character), as
# the Death outcomes name them.
DEATHS = "identity/deaths"


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell of the table: base + per_player × N + per_loyalist × living loyalists + per_rebel × living
    rebels, when ``condition`` holds (else 0). Conditions: "" (always), "alive" (the seat is alive at the
    end), "lost_final_duel" (docs/rules.md#scoring, S-3), "lone_spy" (the spy who won, S-5)."""

    base: int = 0
    per_player: int = 0
    per_loyalist: int = 0
    per_rebel: int = 0
    condition: str = ""


# docs/rules.md#scoring: (role, winning side) -> cell. A pair missing here scores 0.
TABLE: dict[tuple[int, int], Cell] = {
    (LORD, pb.SIDE_LORD): Cell(base=4, per_loyalist=2),
    (LORD, pb.SIDE_SPY): Cell(base=1),
    (LOYALIST, pb.SIDE_LORD): Cell(base=5, per_loyalist=1),
    (REBEL, pb.SIDE_REBELS): Cell(per_rebel=3),
    (SPY, pb.SIDE_LORD): Cell(per_player=1, condition="lost_final_duel"),
    (SPY, pb.SIDE_REBELS): Cell(base=1, condition="alive"),
    (SPY, pb.SIDE_SPY): Cell(base=4, per_player=2, condition="lone_spy"),
}

# Personal bonuses: killer's role -> (victim's role -> points), and whether only a killer of the winning side
# earns them (the lord's and the loyalists' do; the rebels' count whoever wins).
KILL_BONUS: dict[int, dict[int, int]] = {
    LORD: {REBEL: 1, SPY: 1},
    LOYALIST: {REBEL: 1, SPY: 1},
    REBEL: {LOYALIST: 1, SPY: 1, LORD: 2},
}
BONUS_ONLY_FOR_WINNERS: dict[int, int] = {LORD: pb.SIDE_LORD, LOYALIST: pb.SIDE_LORD}


@dataclass(frozen=True, slots=True)
class Score:
    """One seat's score, and how it is made up (in words)."""

    seat: int
    score: int
    basis: str


def note_death(game: Game, victim: int, killer: int | None, reborn: bool = False) -> None:
    """Remember a death for the kill bonuses and the final one-on-one (called as the Death outcome is made)."""
    game.package_state.setdefault(DEATHS, []).append((victim, killer, reborn))


def deaths(game: Game) -> list[tuple[int, int | None, bool]]:
    found: list[tuple[int, int | None, bool]] = game.package_state.get(DEATHS, [])
    return found


Living = Callable[[int], bool]


def final_duel_loser(game: Game, side: int, living: Living) -> int | None:
    """S-3: the spy whose death left the lord the only living character (the lord's side then wins)."""
    if side != pb.SIDE_LORD:
        return None
    alive = [p for p in game.players if living(p.seat)]
    died = deaths(game)
    if len(alive) != 1 or alive[0].role != LORD or not died:
        return None
    last = died[-1][0]
    return last if game.players[last].role == SPY else None


def plural(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def cell_score(game: Game, seat: int, side: int, winners: Sequence[int], living: Living) -> tuple[int, str]:
    """The table's part of a seat's score, with its basis."""
    p = game.players[seat]
    role = ROLE_NAMES.get(p.role, "no role")
    cell = TABLE.get((p.role, side))
    if cell is None:
        return 0, f"{role}: 0"
    if cell.condition == "alive" and not living(seat):
        return 0, f"{role}, dead: 0"
    if cell.condition == "lost_final_duel" and final_duel_loser(game, side, living) != seat:
        return 0, f"{role}, not the loser of a final one-on-one with the lord: 0"
    if cell.condition == "lone_spy" and seat not in winners:
        return 0, f"{role}, not the spy who won: 0"
    loyalists = sum(1 for q in game.players if living(q.seat) and q.role == LOYALIST)
    rebels = sum(1 for q in game.players if living(q.seat) and q.role == REBEL)
    value = cell.base + cell.per_player * game.n + cell.per_loyalist * loyalists + cell.per_rebel * rebels
    terms = [str(cell.base)] if cell.base or not (cell.per_player or cell.per_loyalist or cell.per_rebel) else []
    if cell.per_player:
        terms.append(f"{cell.per_player} × {game.n} players" if cell.per_player != 1 else f"{game.n} players")
    if cell.per_loyalist:
        terms.append(f"{cell.per_loyalist} × {plural(loyalists, 'living loyalist')}")
    if cell.per_rebel:
        terms.append(f"{cell.per_rebel} × {plural(rebels, 'living rebel')}")
    extra = {"alive": ", alive", "lost_final_duel": ", lost the final one-on-one with the lord",
             "lone_spy": ""}[cell.condition] if cell.condition else ""
    text = " + ".join(terms)
    return value, f"{role}{extra}: {text}" + (f" = {value}" if len(terms) > 1 or text != str(value) else "")


def kill_bonus(game: Game, seat: int, side: int) -> tuple[int, list[str]]:
    """The seat's personal bonuses for the characters it killed (docs/rules.md#scoring-bonus)."""
    p = game.players[seat]
    points = KILL_BONUS.get(p.role)
    if not points or BONUS_ONLY_FOR_WINNERS.get(p.role, side) != side:
        return 0, []
    total, parts = 0, []
    for victim, killer, reborn in deaths(game):
        if killer != seat or victim == seat or reborn:  # S-9: a reborn victim already counted as dead
            continue
        v = game.players[victim]
        gain = points.get(v.role, 0)
        if gain:
            total += gain
            parts.append(f"+{gain} for killing {ROLE_NAMES[v.role]} seat {victim}")
    return total, parts


def final_scores(game: Game, end: GameEnded, living: Living | None = None) -> tuple[Score, ...]:
    """Every seat's score at the end of ``game`` (docs/rules.md#scoring). A draw scores 0 for everyone (S-4).
    ``living``: does a seat count as alive (default: it is; the rebirth variant leaves reborn characters out)."""
    if living is None:
        living = lambda seat: game.players[seat].alive  # noqa: E731
    if end.side == pb.SIDE_NONE:
        return tuple(Score(s, 0, "draw game: 0") for s in range(game.n))
    won = SIDE_NAMES.get(end.side, "the game ended")
    out = []
    for seat in range(game.n):
        value, basis = cell_score(game, seat, end.side, end.winners, living)
        bonus, parts = kill_bonus(game, seat, end.side)
        if parts:
            basis += "; " + "; ".join(parts) + f" → {value + bonus}"
        out.append(Score(seat, value + bonus, f"{won}: {basis}"))
    return tuple(out)
