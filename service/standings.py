"""The GetStandings RPC's answer, from the store's standings (storage/standings.py)."""

from __future__ import annotations

from sgsverify.v1 import service_pb2 as spb
from storage.standings import Standings


def standings_response(s: Standings) -> spb.GetStandingsResponse:
    out = spb.GetStandingsResponse(tournament=s.tournament, never_lord=s.never_lord, unnamed_seats=s.unnamed_seats)
    for p in s.players:
        out.players.add(rank=p.rank, player=p.player, total=p.total, games=p.games, wins=p.wins,
                        lord_games=p.lord_games, games_with_violations=p.games_with_violations)
    for g in s.games:
        game = out.games.add(replay_id=g.replay_id, round=g.round, table=g.table, violation_count=g.violation_count,
                             violation_codes=g.violation_codes, scored=g.scored, counted=g.counted, note=g.note,
                             side=g.side)
        game.submitted_at.FromDatetime(g.submitted_at)
        for seat in g.seats:
            game.seats.add(seat=seat.seat, player=seat.player, role=seat.role, score=seat.score,
                           winner=seat.winner)
    return out
