"""`sgs-verify standings --tournament T`: a tournament's players ranked by their total score
(docs/rules.md#scoring) over its stored games, from the server's GetStandings RPC (docs/service.md#standings)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from google.protobuf import json_format

from clients.client import ListFilter, ServiceError
from clients.commands.service import EXIT_CLEAN, _fail, _server_option, connect, why_nothing
from sgsverify.v1 import service_pb2 as spb


def register(sub: Any) -> None:
    cmd = sub.add_parser("standings", help="a tournament's players ranked by their total score",
                         description="Rank the players of a tournament (the replays' --tournament label) by their "
                         "total score over its finished identity games (fourth-edition scoring, docs/rules.md"
                         "#scoring). Games with violations are marked (and with --exclude-violations left out of the "
                         "totals); how often each player was the lord is shown.")
    cmd.add_argument("--tournament", required=True, help="the tournament's label")
    _server_option(cmd)
    cmd.add_argument("--tenant", default="", help="only this tenant's games (an admin token sees every tenant's "
                     "otherwise; any other token only its own)")
    cmd.add_argument("--exclude-violations", action="store_true", help="leave games with violations out of the totals")
    cmd.add_argument("--games", action="store_true", help="also list every game with its scores")
    cmd.add_argument("--json", action="store_true", help="the standings as JSON")
    cmd.set_defaults(run=run_standings)


def run_standings(args: argparse.Namespace) -> int:
    notes: list[str] = []
    try:
        with connect(args) as client:
            res = client.standings(args.tournament, tenant=args.tenant, exclude_violations=args.exclude_violations)
            if not res.games:
                # (as list says it: a tournament label no stored replay has, most likely a typo)
                notes = why_nothing(client, ListFilter(tournament=args.tournament, tenant=args.tenant))
    except (ServiceError, ValueError) as err:
        return _fail(err)
    if args.json:
        print(json_format.MessageToJson(res, ensure_ascii=False, indent=1, preserving_proto_field_name=True,
                                        always_print_fields_with_no_presence=True))
    else:
        for line in standings_lines(res, args.games):
            print(line)
    for note in notes:
        print(f"sgs-verify: {note} (sgs-verify list shows the stored replays and their tournaments)", file=sys.stderr)
    return EXIT_CLEAN


def standings_lines(res: spb.GetStandingsResponse, games: bool = False) -> Iterator[str]:
    from verifier.text import ROLE, SIDE

    counted = sum(g.counted for g in res.games)
    flagged = sum(1 for g in res.games if g.violation_count)
    yield (f"tournament {res.tournament}: {len(res.games)} game(s), {counted} counted, {flagged} with violations; "
           f"{len(res.players)} player(s)")
    if not res.players:
        return
    width = max(6, *(len(p.player) for p in res.players))
    yield f"{'rank':>4}  {'player':<{width}}  {'total':>5}  {'games':>5}  {'wins':>4}  {'lord':>4}  flagged games"
    for p in res.players:
        yield (f"{p.rank:>4}  {p.player:<{width}}  {p.total:>5}  {p.games:>5}  {p.wins:>4}  {p.lord_games:>4}  "
               f"{p.games_with_violations or '-'}")
    yield "every player was the lord at least once" if not res.never_lord else \
        f"never the lord: {', '.join(res.never_lord)}"
    if res.unnamed_seats:
        yield f"{res.unnamed_seats} seat(s) with no player name are in no standing"
    uncounted = [g for g in res.games if not g.counted]
    if games or uncounted:
        yield ""
    for g in res.games:
        if not games and g.counted:
            continue
        where = " ".join(x for x in (f"round {g.round}" if g.round else "", f"table {g.table}" if g.table else "") if x)
        mark = f"  !! {g.violation_count} violation(s): {', '.join(g.violation_codes)}" if g.violation_count else ""
        head = f"{g.replay_id[:12]}  {where + '  ' if where else ''}"
        if g.scored:
            seats = ", ".join(f"{s.player or f'seat {s.seat}'} {s.score} ({ROLE.get(s.role, '?')})" for s in g.seats)
            yield f"{head}{SIDE.get(g.side, '?')} win: {seats}{mark}"
        else:
            yield f"{head}{g.note}{mark}"
        if g.scored and not g.counted:
            yield f"    not counted: {g.note}"
