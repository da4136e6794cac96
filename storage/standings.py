"""Tournament standings (docs/service.md#standings): the players of the replays sharing a ``tournament``
label, ranked by their total score (docs/rules.md#scoring) over the tournament's finished identity games.

Read from the submission verdicts' ``scores`` column (storage/models.py) and the seats' dealt roles, in one
query; the ranking itself is plain Python over a tournament's few games, so it is the same on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import and_, select
from sqlalchemy.orm import selectinload

from storage.models import SUBMISSION_RUN, Replay, Verdict
from storage.store import (
    MAX_LABEL_LENGTH,
    SERVER_FORMATS,
    InvalidQuery,
    Store,
    stored_scores,
    tenant_problem,
    text_problem,
)

MODE_IDENTITY = 1  # sgsverify.v1.Mode (the store knows no protobuf)
ROLE_LORD = 1  # sgsverify.v1.Role


@dataclass(frozen=True, slots=True)
class GameSeat:
    seat: int
    player: str
    role: int
    score: int
    winner: bool


@dataclass(frozen=True, slots=True)
class StandingGame:
    """One game of the tournament, as the standings list it."""

    replay_id: str
    round: str
    table: str
    submitted_at: datetime
    violation_count: int
    violation_codes: tuple[str, ...]
    scored: bool
    counted: bool
    note: str  # why it is not counted, when it is not
    side: int
    seats: tuple[GameSeat, ...]


@dataclass(slots=True)
class PlayerStanding:
    player: str
    total: int = 0
    games: int = 0
    wins: int = 0
    lord_games: int = 0
    games_with_violations: int = 0
    rank: int = 0


@dataclass(frozen=True, slots=True)
class Standings:
    tournament: str
    players: tuple[PlayerStanding, ...]
    games: tuple[StandingGame, ...]
    never_lord: tuple[str, ...]
    unnamed_seats: int
    exclude_violations: bool = False
    tenant: str | None = field(default=None)


def standings(store: Store, tournament: str, tenant: str | None = None,
              exclude_violations: bool = False) -> Standings:
    """The standings of ``tournament`` over ``tenant``'s replays (None: every tenant's). InvalidQuery for an empty
    or unstorable label or a malformed tenant name."""
    if not tournament:
        raise InvalidQuery("tournament: give the tournament's label (the replays' metadata.tournament)")
    problems = [p for p in (text_problem("tournament", tournament, MAX_LABEL_LENGTH),
                            None if tenant is None else tenant_problem(tenant)) if p is not None]
    if problems:
        raise InvalidQuery("; ".join(problems))
    query = (select(Replay, Verdict)
             .join(Verdict, and_(Verdict.replay_id == Replay.id, Verdict.run == SUBMISSION_RUN))
             .where(Replay.tournament == tournament))
    if tenant is not None:
        query = query.where(Replay.tenant == tenant)
    query = query.options(selectinload(Replay.seats)).order_by(Replay.submitted_at, Replay.id)
    with store.transaction() as session:
        rows = session.execute(query).all()
        games = tuple(_game(replay, verdict, exclude_violations) for replay, verdict in rows)
    return rank(tournament, games, exclude_violations, tenant)


def _game(replay: Replay, verdict: Verdict, exclude_violations: bool) -> StandingGame:
    scores = stored_scores(verdict.scores)
    seats = replay.seats
    winners = {int(w) for w in verdict.winners.split()}
    note = ""
    if replay.log_format in SERVER_FORMATS:
        note = "not replayed by this engine (judged by its server's own rules): not scored"
    elif replay.mode != MODE_IDENTITY:
        note = "not an identity game: not scored"
    elif not verdict.finished:
        note = "unfinished: not scored"
    elif scores is None:
        note = f"verified before scores existed (engine {verdict.engine_version}): not scored"
    elif len(scores) != len(seats):
        note = "not scored"
    scored = not note
    if scored and exclude_violations and verdict.violation_count:
        note = f"{verdict.violation_count} violation(s): left out of the totals"
    got = scores if scored and scores is not None else ()
    return StandingGame(
        replay_id=replay.id, round=replay.round, table=replay.table_label, submitted_at=replay.submitted_at,
        violation_count=verdict.violation_count, violation_codes=tuple(verdict.violation_codes.split()),
        scored=scored, counted=not note, note=note, side=verdict.side,
        seats=tuple(GameSeat(s.seat, s.player, s.role, got[s.seat] if s.seat < len(got) else 0, s.seat in winners)
                    for s in seats))


def rank(tournament: str, games: tuple[StandingGame, ...], exclude_violations: bool = False,
         tenant: str | None = None) -> Standings:
    """Totals per player over the counted games; best first, equal totals sharing a rank (1, 2, 2, 4) and listed
    by name. Lord games and games with violations count every game of the tournament."""
    players: dict[str, PlayerStanding] = {}
    unnamed = 0
    for game in games:
        for seat in game.seats:
            if not seat.player:
                unnamed += 1
                continue
            p = players.setdefault(seat.player, PlayerStanding(seat.player))
            if seat.role == ROLE_LORD:
                p.lord_games += 1
            if game.violation_count:
                p.games_with_violations += 1
            if game.counted:
                p.total += seat.score
                p.games += 1
                p.wins += seat.winner
    ordered = sorted(players.values(), key=lambda p: (-p.total, p.player))
    for i, p in enumerate(ordered):
        p.rank = ordered[i - 1].rank if i and ordered[i - 1].total == p.total else i + 1
    never = tuple(sorted(p.player for p in ordered if not p.lord_games))
    return Standings(tournament, tuple(ordered), games, never, unnamed, exclude_violations, tenant)
