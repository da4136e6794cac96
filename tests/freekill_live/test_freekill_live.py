"""FreeKill's real Lua core, run headless with the sgs-verify tap installed (tests/freekill_live/host.py).

(a) AI games: the tap's log, rotated at a small size and read back by importers.freekill.tap, holds every
    room's records with contiguous seqs; what the tap saw equals what crossed the pipe (ChangeSelf aside);
    each room imports and is judged clean but for FreeKill's known SmartAI deviations.
(b) A modified client: the host substitutes PlayCard replies that break the rules; each is recorded as the
    client's, flagged with its code at the event it led to, and no other client reply is flagged.

Needs $SGS_FREEKILL_CORE and lua5.4 with lua-socket and lua-filesystem (skips otherwise): see conftest.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sgsverify.v1 import game_log_pb2 as pb
from tests.freekill_live import judge as J
from tests.freekill_live.host import CHEATS, RARE_CHEATS, GameRecord, HostError, RotatingLog, play_game

# The games are played in the module's fixtures: more than a test's usual 5 minutes on a slow machine.
pytestmark = pytest.mark.timeout(1200)

AI_GAMES = 3
CHEAT_GAMES_MAX = 6  # games tried until every kind of cheat found a moment to be placed (usually all in one)
# A game of FreeKill's AI now and then runs into a stalemate (華佗 healing forever): given up after this
# long and another one played (a 5-player game takes 2-35 s here).
GAME_TIMEOUT_S = 90.0
TRIES = 3  # games given up in a row before the test fails


def play_or_retry(**kwargs: Any) -> GameRecord:
    for attempt in range(TRIES):
        try:
            args = {**kwargs, "room_id": kwargs["room_id"] + 1000 * attempt}  # a fresh room id each try
            return play_game(None, timeout_s=GAME_TIMEOUT_S, **args)
        except HostError:
            if attempt == TRIES - 1:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def ai_games(fk_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[GameRecord], int]:
    log_path = tmp_path_factory.mktemp("fklog") / "freekill.log"
    # ~1 MB of tap lines a game: 400 kB files rotate a few times a game; enough backups to keep them all, also
    # when FreeKill's AI drags a game out on a loaded machine (one ran to 56,083 records, 61 rotations, and the
    # oldest files were dropped: the test read that as lost lines). Only what is written takes room.
    log = RotatingLog(log_path, max_bytes=400_000, backups=1000)
    try:
        games = [play_or_retry(root=fk_root, log_path=log_path, players=5, room_id=room, log=log)
                 for room in range(1, AI_GAMES + 1)]
    finally:
        log.close()
    return log_path, games, log.rotations


def test_ai_games_finish_and_the_log_rotates(ai_games: tuple[Path, list[GameRecord], int]) -> None:
    log_path, games, rotations = ai_games
    assert all(g.over and g.winner is not None for g in games)
    assert all(not g.anomalies for g in games)
    assert rotations >= 2  # ~1 MB of lines a game into 400 kB files: rooms are split across files
    assert len(J.log_files(log_path)) == rotations + 1


def test_tap_records_are_complete_and_contiguous(ai_games: tuple[Path, list[GameRecord], int]) -> None:
    log_path, games, _ = ai_games
    raw = J.raw_records(log_path)
    assert set(raw) >= {g.room_id for g in games}  # (and any game given up)
    rooms = J.read_rooms(log_path)  # raises TapGap on a missing seq
    for game in games:
        records = raw[game.room_id]
        assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
        assert records == game.tap_records  # what the log holds is what the tap wrote, across rotations
        assert records[0]["kind"] == "meta" and records[0]["ids"] == game.players
        assert records[0]["mode"] == "aaa_role_mode" and records[0]["players"] == 5
        assert records[-1] == {"v": 1, "room": game.room_id, "seq": len(records), "kind": "end",
                               "result": game.winner}
        assert rooms[game.room_id].ended and rooms[game.room_id].result == game.winner
        # one reply per request (no luck cards in these settings); all by the AI, or nobody (a race lost)
        replies = [r for r in records if r["kind"] == "reply"]
        assert len(replies) == len([r for r in records if r["kind"] == "request"])
        assert {r["by"] for r in replies} <= {"ai", "none"}
        assert all((r["by"] == "none") == (r["status"] in ("race", "timeout")) for r in replies)


def test_tap_coverage_equals_the_hosts_view(ai_games: tuple[Path, list[GameRecord], int]) -> None:
    log_path, games, _ = ai_games
    raw = J.raw_records(log_path)
    for game in games:
        tapped = J.tap_view(raw[game.room_id])
        host = J.host_view_without_change_self(game)
        for pid in game.players:
            assert tapped.notifications.get(pid, []) == host[pid], f"room {game.room_id} player {pid}"
        assert tapped.requests == game.view.requests
        # the only messages the tap cannot see: one ChangeSelf a seat at game over
        assert sum(len(v) for v in game.view.notifications.values()) - sum(len(v) for v in host.values()) == 5


def test_ai_games_import_and_verify_clean(ai_games: tuple[Path, list[GameRecord], int]) -> None:
    log_path, games, _ = ai_games
    rooms = J.read_rooms(log_path)
    for game in games:
        verdict = J.judge(rooms[game.room_id])
        assert verdict.followed, verdict.stopped
        assert verdict.finished
        others = [v for v in verdict.violations if v[3] not in J.AI_DEVIATIONS]
        assert others == [], f"room {game.room_id}: {others}"


# --------------------------------------------------------------------------------------------- (b)


@pytest.fixture(scope="module")
def cheat_games(fk_root: Path, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[GameRecord, Path]]:
    out: list[tuple[GameRecord, Path]] = []
    todo = list(CHEATS)
    for n in range(CHEAT_GAMES_MAX):
        if not set(todo) - RARE_CHEATS:
            break
        log_path = tmp_path_factory.mktemp(f"fkcheat{n}") / "freekill.log"
        game = play_or_retry(root=fk_root, log_path=log_path, players=5, room_id=100 + n, seed=n, cheats=todo,
                             timeouts=2 if n == 0 else 0)
        out.append((game, log_path))
        todo = [k for k in todo if k not in {c.kind for c in game.cheats}]
    return out


def test_every_kind_of_cheat_was_placed(cheat_games: list[tuple[GameRecord, Path]]) -> None:
    placed = {c.kind for game, _ in cheat_games for c in game.cheats}
    # (a rare kind is placed when a game offers its moment; every kind placed is checked by the next test)
    assert placed >= set(CHEATS) - RARE_CHEATS, f"not placed in {len(cheat_games)} games: {set(CHEATS) - placed}"
    assert all(game.over and not game.anomalies for game, _ in cheat_games)


def test_each_cheat_is_the_clients_and_flagged_at_its_event(cheat_games: list[tuple[GameRecord, Path]]) -> None:
    assert any(game.cheats for game, _ in cheat_games)
    for game, log_path in cheat_games:
        # (a game may place none: the kinds left found no moment in it; it is still judged, clean, below)
        result = J.evaluate(game, log_path)
        for cheat in result.cheats:
            assert cheat.seq is not None, f"{cheat.kind}: no reply record"
            assert cheat.by == "client", f"{cheat.kind}: the tap says the reply was made by {cheat.by}"
            assert cheat.event is not None, f"{cheat.kind}: no decision of seat {cheat.seat} after seq {cheat.seq}"
            assert cheat.expected in cheat.codes, f"{cheat.kind} (seq {cheat.seq}, event {cheat.event}): {cheat.codes}"
            assert cheat.source == pb.DECISION_SOURCE_CLIENT, f"{cheat.kind}: the event's source is {cheat.source}"
        # the client's other replies (the legal first 杀 before a second one) are not flagged
        assert result.other_client_violations == []
        assert result.client_source_violations == []  # the same, by the importer's Event.source
        # One cheat, one violation: the verifier follows each as FreeKill carried it out (a card taken from
        # another's hand or the draw pile, a skill the general lacks: docs/log-format.md#taken-cards), so
        # nothing follows from it; what remains is FreeKill's own AI's known deviations.
        assert result.followed, f"room {game.room_id}: not followed"
        assert set(result.other_codes) <= J.AI_DEVIATIONS, f"room {game.room_id}: {result.after_cheat}"


# What the tap says of a request its timer ended: "timeout" on 88a912f1 (the player was in FreeKill's `overtimes`);
# "race" from v0.5.19, whose `overtimes` holds only players whose own time ran out, which a timer fired at once is
# not (HEADLESS.md §13). Either way nobody answered, and FreeKill took its default.
UNANSWERED = ("timeout", "race")


def test_an_unanswered_request_is_a_timeout_by_nobody(cheat_games: list[tuple[GameRecord, Path]]) -> None:
    game, log_path = cheat_games[0]
    assert len(game.timeouts) == 2
    records = J.raw_records(log_path)[game.room_id]
    request_seqs = [r["seq"] for r in records if r["kind"] == "request"]
    for player, index in game.timeouts:
        req = request_seqs[index]
        reply = next(r for r in records if r["kind"] == "reply" and r["seq"] > req and r["to"] == player)
        got = (reply["cmd"], reply["by"], reply["status"] in UNANSWERED, reply.get("cancel"))
        assert got == ("PlayCard", "none", True, True), reply
    # nothing else in these games is a timeout; the AI's and the client's replies are told apart
    statuses = {(r["by"], r["status"]) for g, p in cheat_games for r in J.raw_records(p)[g.room_id]
                if r["kind"] == "reply"}
    assert any(by == "none" and status in UNANSWERED for by, status in statuses)
    assert ("client", "reply") in statuses and ("ai", "reply") in statuses
    # (a window asked of several at once that nobody answered is a race too: 无懈可击's AskForUseCard)
    assert sum(1 for r in records if r["kind"] == "reply" and r["cmd"] == "PlayCard" and r["status"] in UNANSWERED) == 2
