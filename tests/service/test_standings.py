"""Tournament standings (docs/service.md#standings) over real gRPC, on SQLite and PostgreSQL: a 16-game
tournament submitted to the service, ranked, and compared with the hand computation below; the RPC's
scope and tenant rules; the CLI's table and --json.

The games are the hand-written scoring scenarios (tests/scenarios/scoring/, each of whose descriptions
works its scores out by hand), with the players' names given to the seats by rotation so that the lord
(seat 0 in every one of them) is each player in turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import json_format

from clients.cli import main
from clients.client import InvalidRequest, Metadata, PermissionDenied, VerifierClient
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from storage.standings import GameSeat, StandingGame, rank
from tests.service.conftest import BACKENDS, fresh_database, make_token, server_config
from tests.service.test_service_rpc import second_slash_log

SCENARIOS = Path(__file__).parent.parent / "scenarios"
PLAYERS = ("alice", "bo", "cy", "di")

# Base games: the scenario, and (by hand, from its description) each seat's score and the winning seats.
BASES = {
    "b1": ("scoring/lord_side_final_duel.json", [6, 5, 0, 4], [0, 1]),
    "b2": ("scoring/spy_wins.json", [1, 12, 0, 0], [1]),
    "b3": ("scoring/rebels_win_all_rebels_dead.json", [0, 1, 0, 0], [2]),
    "b4": ("scoring/lord_side_living_loyalist.json", [8, 6, 0, 0], [0, 1]),
    "b5": ("scoring/lord_side_score_mismatch.json", [6, 5, 0, 4], [0, 1]),  # SCORE_MISMATCH: marked
    "b6": ("scoring/draw_game.json", [0, 0, 0, 0], []),
    "b7": ("scoring/rebels_win_no_killer.json", [0, 3, 0, 1], [1]),
    "b8": ("", [], []),  # the second-杀 game: unfinished, with violations, not scored
}

# The 16 games: (base, rotation r: seat s is PLAYERS[(s + r) % 4], so the lord is PLAYERS[r]), and names that
# replace the rotation's ("" for no name).
GAMES: list[tuple[str, int, dict[int, str]]] = [
    ("b1", 0, {}), ("b2", 1, {}), ("b3", 2, {}), ("b4", 3, {}),
    ("b7", 0, {}), ("b1", 1, {}), ("b2", 2, {}), ("b3", 3, {}),
    ("b4", 0, {}), ("b5", 1, {}), ("b6", 2, {}), ("b7", 3, {}),
    ("b8", 0, {}), ("b2", 1, {}), ("b4", 2, {}), ("b1", 3, {2: "eve", 3: ""}),
]

# The hand computation. Seat by seat (lord first), each game's scores by player:
#  g1  b1 r0: alice 6, bo 5, cy 0, di 4        g9  b4 r0: alice 8, bo 6, cy 0, di 0
#  g2  b2 r1: bo 1, cy 12, di 0, alice 0       g10 b5 r1: bo 6, cy 5, di 0, alice 4   (violations)
#  g3  b3 r2: cy 0, di 1, alice 0, bo 0        g11 b6 r2: everyone 0 (draw)
#  g4  b4 r3: di 8, alice 6, bo 0, cy 0        g12 b7 r3: di 0, alice 3, bo 0, cy 1
#  g5  b7 r0: alice 0, bo 3, cy 0, di 1        g13 b8 r0: not scored (unfinished; violations)
#  g6  b1 r1: bo 6, cy 5, di 0, alice 4        g14 b2 r1: bo 1, cy 12, di 0, alice 0
#  g7  b2 r2: cy 1, di 12, alice 0, bo 0       g15 b4 r2: cy 8, di 6, alice 0, bo 0
#  g8  b3 r3: di 0, alice 1, bo 0, cy 0        g16 b1 r3: di 6, alice 5, eve 0, (unnamed) 4
# Totals:
#  alice 6+0+0+6+0+4+0+1+8+4+0+3+0+0+5 = 37      cy 0+12+0+0+0+5+1+0+0+5+0+1+12+8 = 44
#  bo    5+1+0+0+3+6+0+0+6+6+0+0+1+0   = 28      di 4+0+1+8+1+0+12+0+0+0+0+0+0+6+6 = 38
#  eve 0. Without g10: alice 33, bo 22, cy 39, di 38.
# Wins (a seat among the winners; per base: b1, b4, b5 seats 0-1; b2 seat 1; b3 seat 2; b7 seat 1; b6 none):
#  alice g1 g3 g4 g9 g12 g16 = 6; bo g1 g5 g6 g8 g9 g10 = 6; cy g2 g6 g10 g14 g15 = 5; di g4 g7 g15 g16 = 4.
# Lord: each of the four 4 times (g13 too: lord games count every game); eve never.
# Games counted: alice 15 (all but g13), bo 14 and cy 14 (not in g16), di 15, eve 1.
# Games with violations sat in: g10 and g13, both with all four: 2 each; eve 0.
EXPECTED = [  # rank, player, total, games, wins, lord games, games with violations
    (1, "cy", 44, 14, 5, 4, 2), (2, "di", 38, 15, 4, 4, 2), (3, "alice", 37, 15, 6, 4, 2),
    (4, "bo", 28, 14, 6, 4, 2), (5, "eve", 0, 1, 0, 0, 0)]
EXPECTED_CLEAN_ONLY = [
    (1, "cy", 39, 13, 4, 4, 2), (2, "di", 38, 14, 4, 4, 2), (3, "alice", 33, 14, 6, 4, 2),
    (4, "bo", 22, 13, 5, 4, 2), (5, "eve", 0, 1, 0, 0, 0)]


def base_log(base: str) -> pb.GameLog:
    path = BASES[base][0]
    if not path:
        return second_slash_log()
    doc = json.loads((SCENARIOS / path).read_text(encoding="utf-8"))
    return json_format.ParseDict(doc["log"], pb.GameLog())


def tournament_logs() -> list[pb.GameLog]:
    logs = []
    for k, (base, r, names) in enumerate(GAMES):
        log = base_log(base)
        log.header.recorder = f"spring-cup game {k + 1}"  # g2 and g14 are the same game: two logs all the same
        for s, seat in enumerate(log.header.seats):
            seat.player = names.get(s, PLAYERS[(s + r) % 4])
        logs.append(log)
    return logs


@dataclass
class Tournament:
    server: BackgroundServer
    tokens: dict[str, str]
    ids: list[str]

    def client(self, who: str) -> VerifierClient:
        return VerifierClient(self.server.address, timeout=60, token=self.tokens[who])


TOKENS = {"acme": ("acme", "submit,read"), "acme-submitter": ("acme", "submit"), "bravo": ("bravo", "submit,read"),
          "admin": ("ops", "admin")}


@pytest.fixture(scope="module", params=BACKENDS)
def tournament(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tournament]:
    folder = tmp_path_factory.mktemp(f"standings-{request.param}")
    url, pg = fresh_database(request.param, folder)
    tokens = {name: make_token(url, tenant, scopes, name) for name, (tenant, scopes) in TOKENS.items()}
    server = BackgroundServer(server_config(url, folder)).start()
    try:
        with VerifierClient(server.address, timeout=60, token=tokens["acme"]) as acme:
            ids = [acme.verify(log, Metadata(tournament="spring-cup", round=str(1 + k // 4), table=str(1 + k % 4))).id
                   for k, log in enumerate(tournament_logs())]
        yield Tournament(server, tokens, ids)
    finally:
        server.stop()
        if pg is not None:
            pg.drop()


def rows(res: object) -> list[tuple[object, ...]]:
    return [(p.rank, p.player, p.total, p.games, p.wins, p.lord_games, p.games_with_violations)
            for p in res.players]  # type: ignore[attr-defined]


def test_sixteen_games_give_the_hand_computed_standings(tournament: Tournament) -> None:
    with tournament.client("acme") as acme:
        res = acme.standings("spring-cup")
    assert rows(res) == EXPECTED
    assert list(res.never_lord) == ["eve"]
    assert res.unnamed_seats == 1
    assert len(set(tournament.ids)) == 16
    assert [g.replay_id for g in res.games] == tournament.ids  # oldest submission first
    # Each game's scores are the hand-worked ones of its base game; the flagged ones are marked.
    for game, (base, _, _) in zip(res.games, GAMES, strict=True):
        scores, winners = BASES[base][1], BASES[base][2]
        assert game.scored == bool(scores) and game.counted == bool(scores)
        if scores:
            assert [s.score for s in game.seats] == scores
            assert [s.seat for s in game.seats if s.winner] == winners
        assert (game.violation_count > 0) == (base in ("b5", "b8"))
    assert list(res.games[9].violation_codes) == ["SCORE_MISMATCH"]
    assert res.games[12].note == "unfinished: not scored" and not res.games[12].counted
    assert [s.role for s in res.games[0].seats] == [pb.ROLE_LORD, pb.ROLE_LOYALIST, pb.ROLE_REBEL, pb.ROLE_SPY]


def test_games_with_violations_left_out_on_request(tournament: Tournament) -> None:
    with tournament.client("acme") as acme:
        res = acme.standings("spring-cup", exclude_violations=True)
    assert rows(res) == EXPECTED_CLEAN_ONLY
    flagged = res.games[9]
    assert flagged.scored and not flagged.counted and "left out of the totals" in flagged.note
    assert [s.score for s in flagged.seats] == [6, 5, 0, 4]  # still listed with its scores


def test_standings_follow_the_tenant_and_scope_rules(tournament: Tournament) -> None:
    with tournament.client("bravo") as bravo, tournament.client("admin") as admin, \
            tournament.client("acme-submitter") as submitter:
        assert not bravo.standings("spring-cup").players  # another tenant's games are not there
        with pytest.raises(PermissionDenied, match="admin"):
            bravo.standings("spring-cup", tenant="acme")
        with pytest.raises(PermissionDenied, match="'read' scope"):
            submitter.standings("spring-cup")
        assert rows(admin.standings("spring-cup")) == EXPECTED  # every tenant's (only acme has any)
        assert rows(admin.standings("spring-cup", tenant="acme")) == EXPECTED
        assert not admin.standings("spring-cup", tenant="bravo").players
        with pytest.raises(InvalidRequest, match=r"GetStandingsRequest\.tournament"):
            admin.standings("")
        with pytest.raises(InvalidRequest, match=r"GetStandingsRequest\.tournament"):
            admin.standings("x" * 201)


def test_the_standings_command(tournament: Tournament, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--server", tournament.server.address, "--token", tournament.tokens["acme"]]
    assert main(["standings", "--tournament", "spring-cup", *common]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "tournament spring-cup: 16 game(s), 15 counted, 2 with violations; 5 player(s)"
    assert out[1].split() == ["rank", "player", "total", "games", "wins", "lord", "flagged", "games"]
    assert [line.split() for line in out[2:7]] == [
        ["1", "cy", "44", "14", "5", "4", "2"], ["2", "di", "38", "15", "4", "4", "2"],
        ["3", "alice", "37", "15", "6", "4", "2"], ["4", "bo", "28", "14", "6", "4", "2"],
        ["5", "eve", "0", "1", "0", "0", "-"]]
    assert out[7] == "never the lord: eve"
    assert any("unfinished: not scored  !! 1 violation(s): SLASH_LIMIT" in line for line in out)
    assert main(["standings", "--tournament", "spring-cup", "--json", *common]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(p["player"], p["total"]) for p in doc["players"]] == [(r[1], r[2]) for r in EXPECTED]
    # a tournament no replay has (a typo) gets a hint, as list gives one
    assert main(["standings", "--tournament", "spring-cpu", *common]) == 0
    said = capsys.readouterr()
    assert "0 game(s)" in said.out and "no stored replay has --tournament 'spring-cpu'" in said.err


def test_show_prints_the_scores(tournament: Tournament, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--server", tournament.server.address, "--token", tournament.tokens["acme"]]
    assert main(["show", tournament.ids[0], *common]) == 0
    out = capsys.readouterr().out
    assert "  scores (docs/rules.md#scoring):\n    seat 0 alice: 6  (the lord's side won: lord: 4 + 2 × 0 living " \
           "loyalists = 4; +1 for killing rebel seat 2; +1 for killing spy seat 3 → 6)\n" in out
    assert "    seat 3 di: 4  (the lord's side won: spy, lost the final one-on-one with the lord" in out
    with tournament.client("acme") as acme:
        info = acme.get(tournament.ids[0]).info
    assert [s.score for s in info.result.scores] == [6, 5, 0, 4]  # the list's summary carries them too


def test_equal_totals_share_a_rank() -> None:
    def game(scores: list[int], players: list[str]) -> StandingGame:
        from datetime import UTC, datetime

        return StandingGame("0" * 64, "", "", datetime(2026, 1, 1, tzinfo=UTC), 0, (), True, True, "", 1,
                            tuple(GameSeat(i, p, 1 if i == 0 else 3, s, False)
                                  for i, (p, s) in enumerate(zip(players, scores, strict=True))))

    s = rank("t", (game([5, 3, 3, 1], ["d", "b", "a", "c"]), game([0, 0, 2, 0], ["a", "b", "c", "d"])))
    assert [(p.rank, p.player, p.total) for p in s.players] == [(1, "d", 5), (2, "a", 3), (2, "b", 3), (2, "c", 3)]
    assert s.never_lord == ("b", "c")


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_finished_identity_games_are_scored(backend: str, database: str) -> None:
    from clients.selfplay import play_game
    from service.work import VerifyJob, run_job
    from storage.standings import standings
    from storage.store import Store, SubmissionMetadata

    def record(log: pb.GameLog) -> object:
        return run_job(VerifyJob(log.SerializeToString(deterministic=True), SubmissionMetadata(tournament="mixed"),
                                 100_000, canonical=True, return_log=True))

    hegemony = play_game(1, 5, mode=pb.MODE_HEGEMONY)
    identity = play_game(3, 6)
    unfinished = second_slash_log()
    store = Store.open(database)
    try:
        for log in (hegemony, identity, unfinished):
            store.save(record(log))  # type: ignore[arg-type]
        s = standings(store, "mixed")
        assert [(g.scored, g.note) for g in s.games] == [
            (False, "not an identity game: not scored"), (True, ""), (False, "unfinished: not scored")]
        assert sum(p.games for p in s.players) == 6  # the identity game's six seats only
        assert {p.player for p in s.players if p.games} == {f"bot-{i}" for i in range(6)}
        from verifier import verify

        assert [x.score for x in s.games[1].seats] == [x.score for x in verify(identity).result.scores]
        assert sum(p.total for p in s.players) == sum(x.score for x in s.games[1].seats)
    finally:
        store.close()
