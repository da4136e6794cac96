"""End to end, live, in rooms this engine does not replay: FreeKill's real core plays rooms whose generals all come
from standard_ex and 神话再临 (the peers' utility, standard_ex and shzl packages; standard_ex's 木牛流马 in the deck),
with the tap and its reply check, while `sgs-verify bridge` follows the log into a real `sgs-verify serve`.

A modified client's replies of many kinds (host.CHEATS's card cheats, a reply answering the wrong request, a discard
one card short, a second 乐不思蜀 on one character when a game offers it, and the extension room's own: a general not
offered, 界制衡 twice in a phase, a card chosen from an area not offered, an option 崩坏's AskForChoice did not offer)
are each printed live as FreeKill's rules refused them (the check's code, at the reply's record, naming the player,
the client's reply); no other client reply is refused; every room is said `not_replayed` once
and stored whole with FreeKill's verdicts (judged_by server), none reported uncheckable
(docs/freekill-bridge.md#two-engines).

The same in a 国战 room (FreeKill's hegemony package, 6 players): the card cheats a modified client sends there (those
illegal whatever the generals) are each refused live by FreeKill's rules, and the room stored with their verdicts.

Needs $SGS_FREEKILL_CORE (or $SGS_FREEKILL_CORES), lua5.4 with lua-socket and lua-filesystem, and the peers'
utility, standard_ex and shzl archives (and hegemony's, for the 国战 room) beside the core (or in
$SGS_FREEKILL_PACKAGES): skips otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.client import ListFilter, VerifierClient
from service.server import BackgroundServer
from tests.freekill_live.conftest import unavailable
from tests.freekill_live.host import (
    CHECK_CODES,
    EXTENSION_SETTINGS,
    RARE_CHEATS,
    SETTINGS,
    GameRecord,
    install,
    install_extensions,
    peer_archive,
)
from tests.freekill_live.test_tap_check import play
from tests.service.conftest import fresh_database, server_config
from tests.service.test_bridge import Running, wait_for

pytestmark = pytest.mark.timeout(1800)

KINDS = ["not_held", "draw_pile", "second_slash", "two_targets", "jink_in_play", "snatch_far", "out_of_range",
         "peach_full_hp", "dismantle_self", "duel_self", "wrong_answer", "discard_short", "discard_extra",
         "duplicate_delayed"]
EXTRAS = ["general_not_offered", "skill_twice", "card_chosen_elsewhere", "choice_not_offered"]
ROOMS_MAX = 6  # rooms tried until ten kinds found their moment
TOURNAMENT = "fk-ext"


@pytest.fixture(scope="module")
def played(core: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[GameRecord], Running,
                                                                                   BackgroundServer]]:
    missing = [n for n in ("utility", "standard_ex", "shzl") if peer_archive(core, n) is None]
    if missing:
        unavailable(f"the peers' {', '.join(missing)} archives are not beside {core}")
    root = tmp_path_factory.mktemp("fkextroot")
    install(core, root)
    install_extensions(core, root)
    tmp = tmp_path_factory.mktemp("fkextbridge")
    url, _ = fresh_database("sqlite", tmp)
    server = BackgroundServer(server_config(url, tmp)).start()
    run = Running(tmp, server.address, TOURNAMENT)  # following before the first line is written
    games: list[GameRecord] = []
    try:
        todo, extras = list(KINDS), list(EXTRAS)
        for n in range(ROOMS_MAX):
            if not [k for k in todo if k not in RARE_CHEATS] and not extras:
                break  # (a rare kind is placed when a game offers its moment)
            game = play(core=core, root=root, log_path=tmp / "freekill.log", room_id=800 + n, seed=n,
                        cheats=todo, extras=extras, settings=EXTENSION_SETTINGS)
            games.append(game)
            kinds = {c.kind for c in game.cheats}
            todo = [k for k in todo if k not in kinds]
            extras = [k for k in extras if k not in kinds]
        wait_for(lambda: run.settled(g.room_id for g in games), 300)
        yield games, run, server
    finally:
        run.stop()
        server.stop()


def test_each_cheat_in_an_extension_room_is_refused_live_by_freekills_rules(
        played: tuple[list[GameRecord], Running, BackgroundServer]) -> None:
    games, run, _ = played
    cheats = [(g.room_id, c) for g in games for c in g.cheats if c.seq is not None]
    refused = {(room, c.seq): c for room, c in cheats if c.expected_code != "ok"}  # ("ok": an extra turned legal)
    kinds = {c.kind for c in refused.values()}
    assert len(kinds) >= 10 and {"card_chosen_elsewhere", "skill_twice", "choice_not_offered"} <= kinds, sorted(kinds)
    # (a room given up as stalled, played again under another id, is judged too: its lines are not these games')
    printed = [p for p in run.lines.of("violation") if p["room"] in {g.room_id for g in games}]
    assert all(p.get("judge") == "freekill" for p in printed)  # (this engine replays none of these rooms)
    got = {(p["room"], p["record"]): p for p in printed}
    for key, cheat in refused.items():
        p = got.get(key)
        assert p is not None, f"room {key[0]}: {cheat.kind} (record {key[1]}) was not printed"
        assert (p["code"], p["player"], p["source"]) == (CHECK_CODES[cheat.kind], cheat.player, "client"), (cheat, p)
    assert sorted(set(got) - set(refused)) == []  # no honest client reply refused


def test_every_extension_room_is_stored_with_freekills_verdicts(
        played: tuple[list[GameRecord], Running, BackgroundServer]) -> None:
    games, run, server = played
    assert run.lines.of("uncheckable") == []
    # (a room given up as stalled and played again under another id is followed too, and stored if it ended)
    played_rooms = {g.room_id for g in games}
    said = {u["room"] for u in run.lines.of("not_replayed")}
    assert said >= played_rooms
    stored = {s["room"]: s for s in run.lines.of("stored")}
    assert said >= set(stored) >= played_rooms and all(s["judged_by"] == "freekill" for s in stored.values())
    with VerifierClient(server.address, timeout=60) as client:
        listed = {i.metadata.table: i for i in client.list(ListFilter(tournament=TOURNAMENT, judged_by="server"))}
        assert sorted(listed) == sorted(f"room {r}" for r in stored)
        for game in games:
            info = listed[f"room {game.room_id}"]
            wanted = sorted({CHECK_CODES[c.kind] for c in game.cheats if c.seq is not None and c.expected_code != "ok"})
            assert list(info.violation_codes) == wanted, game.room_id
            assert info.result.finished == game.over


HEGEMONY_PACKAGES = ("utility", "standard_ex", "shzl", "hegemony")  # (hegemony needs the other three)
HEGEMONY_SETTINGS = {**SETTINGS, "gameMode": "new_heg_mode", "disabledPack": ["test_p_0"], "generalNum": 5}
# Kinds illegal whatever the generals: the host judges a second 杀, a 杀 out of range or at two targets by the
# identity generals' and weapons' names it knows, and 国战's own (张飞's 咆哮 as ld__paoxiao, say) can make them legal.
HEGEMONY_KINDS = ["not_held", "draw_pile", "jink_in_play", "peach_full_hp"]


@pytest.fixture(scope="module")
def hegemony(core: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[GameRecord], Running,
                                                                                     BackgroundServer]]:
    missing = [n for n in HEGEMONY_PACKAGES if peer_archive(core, n) is None]
    if missing:
        unavailable(f"the peers' {', '.join(missing)} archives are not beside {core}")
    root = tmp_path_factory.mktemp("fkhegroot")
    install(core, root)
    install_extensions(core, root, HEGEMONY_PACKAGES)
    tmp = tmp_path_factory.mktemp("fkhegbridge")
    url, _ = fresh_database("sqlite", tmp)
    server = BackgroundServer(server_config(url, tmp)).start()
    run = Running(tmp, server.address, "fk-heg")
    games: list[GameRecord] = []
    try:
        todo = list(HEGEMONY_KINDS)
        for n in range(3):
            if len({c.kind for g in games for c in g.cheats}) >= 3:
                break
            game = play(core=core, root=root, log_path=tmp / "freekill.log", players=6, room_id=900 + n, seed=n,
                        cheats=todo, settings=HEGEMONY_SETTINGS)
            games.append(game)
            todo = [k for k in todo if k not in {c.kind for c in game.cheats}] or list(HEGEMONY_KINDS)
        wait_for(lambda: run.settled(g.room_id for g in games), 300)
        yield games, run, server
    finally:
        run.stop()
        server.stop()


def test_a_hegemony_room_is_judged_live_by_freekills_rules(
        hegemony: tuple[list[GameRecord], Running, BackgroundServer]) -> None:
    games, run, server = hegemony
    # (a legal reply the host sent on the way to a cheat, the first 杀 before a second, is no cheat: "ok")
    refused = {(g.room_id, c.seq): c for g in games for c in g.cheats if c.seq is not None and c.expected_code != "ok"}
    assert len({c.kind for c in refused.values()}) >= 3, sorted({c.kind for c in refused.values()})
    played_rooms = {g.room_id for g in games}  # (not a room given up as stalled and played again: judged too)
    got = {(p["room"], p["record"]): p for p in run.lines.of("violation") if p["room"] in played_rooms}
    assert sorted(got) == sorted(refused)  # each cheat, and nothing else
    for key, cheat in refused.items():
        p = got[key]
        assert (p["code"], p["player"], p["source"], p["judge"]) == \
            (CHECK_CODES[cheat.kind], cheat.player, "client", "freekill"), (cheat, p)
    said = {u["room"]: u["reason"] for u in run.lines.of("not_replayed")}
    assert set(said) >= played_rooms and all("new_heg_mode" in r for r in said.values())
    assert run.lines.of("uncheckable") == []
    with VerifierClient(server.address, timeout=60) as client:
        listed = [i for i in client.list(ListFilter(tournament="fk-heg", judged_by="server"))
                  if i.metadata.table in {f"room {r}" for r in played_rooms}]
        assert len(listed) == len(games)
        assert sum(i.violation_count for i in listed) == len(refused)
