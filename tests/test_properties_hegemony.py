"""Properties over seeded hegemony (国战) self-play games of 4 to 10 players, dealt from all 60 generals (the rotating
deal): every game verifies clean and
finishes with a kingdom (or careerist, or lone survivor) winning, every card of the 108-card hegemony deck
is in exactly one place after every event, the generals' state is consistent (a character with a kingdom
has a face-up general), and verifying twice (also in another process with another hash seed) gives
byte-identical annotated replays."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from clients.selfplay import play_game
from clients.selfplay.hegemony import HegemonyBot, make_header
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_properties import (
    assert_cards_conserved,
    assert_same_digests_in_another_process,
    assert_verified_identically_twice,
)
from verifier import Verifier, verify
from verifier.engine.effects import Ruleset
from verifier.engine.requests import pick_request
from verifier.generals import hegemony_generals
from verifier.packages.modes.hegemony import HegemonyMode, deal_candidates, implemented, packages
from verifier.rng import Stream

GAMES = 200


def game_params(i: int) -> tuple[int, int]:
    return 5000 + i, 4 + i % 7


@cache
def corpus() -> list[pb.GameLog]:
    return [play_game(seed, players, mode=pb.MODE_HEGEMONY) for seed, players in map(game_params, range(GAMES))]


def test_every_game_verifies_clean() -> None:
    for log in corpus():
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished, (log.header.seed, replay.result.reason)
        assert all(not a.derived for a in replay.annotations), "complete self-play logs need no derived outcome"
        over = log.events[-1].game_over
        assert over.side == pb.SIDE_KINGDOM and replay.result.side == pb.SIDE_KINGDOM
        assert list(replay.result.winners) == list(over.winners) and over.winners


def test_player_counts_and_outcomes_covered() -> None:
    logs = corpus()
    assert {len(log.header.seats) for log in logs} == set(range(4, 11))
    kinds = Counter(log.events[-1].game_over.kingdom for log in logs)
    assert kinds["wei"] and kinds["shu"] and kinds["wu"] and kinds["qun"], kinds
    # (With four kingdoms of one size careerists are rare: tests/scenarios/hegemony/kingdom/ has them.)
    events = Counter(ev.WhichOneof("kind") for log in logs for ev in log.events)
    for kind in ("reveal_general", "general_revealed", "kingdom_fixed", "choose_option", "pick_general"):
        assert events[kind], kind
    picked = Counter(g for log in logs for ev in log.events if ev.HasField("pick_general")
                     for g in (ev.pick_general.general, ev.pick_general.deputy))
    assert sorted(picked) == sorted(hegemony_generals()), "every one of the 60 generals is picked"
    draws = Counter(ev.draw_cards.reason for log in logs for ev in log.events if ev.HasField("draw_cards"))
    for reason in (pb.DRAW_REASON_KILL_REWARD, pb.DRAW_REASON_COMPANION, pb.DRAW_REASON_HALF_FISH):
        assert draws[reason], reason
    assert any(ev.cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY for log in logs for ev in log.events
               if ev.HasField("cards_moved"))
    assert any(ev.respond.whole_kingdom for log in logs for ev in log.events if ev.HasField("respond"))


@pytest.mark.parametrize("chunk", range(4))
def test_every_card_in_exactly_one_place_after_every_event(chunk: int) -> None:
    for log in corpus()[chunk::4]:
        assert_cards_conserved(log, 108)


def test_kingdoms_follow_the_face_up_generals() -> None:
    """After every event: a character has a kingdom exactly when one of its generals is face up, a careerist's
    kingdom count never exceeds half the table, and a character's skills are its face-up generals'."""
    for log in corpus()[:30]:
        v = Verifier(log.header)
        game = v.game
        assert game is not None and isinstance(game.mode, HegemonyMode)
        mode = game.mode
        for ev in log.events:
            v.feed([ev])
            for p in game.players:
                g = mode.generals.get(p.seat)
                if g is None:
                    continue
                assert bool(p.kingdom) == any(g.shown), (log.header.seed, p.seat)
                assert all(s.name not in {e.name for e in p.latent_skills} for s in p.skills)
            for k in ("wei", "shu", "wu", "qun"):
                assert 2 * sum(1 for p in game.players if p.kingdom == k) <= game.n


def test_verifying_twice_is_identical() -> None:
    assert_verified_identically_twice(corpus()[:40])


def test_identical_in_another_process_with_another_hash_seed() -> None:
    assert_same_digests_in_another_process(corpus()[:6], (
        "from clients.selfplay import play_game\n"
        "from sgsverify.v1 import game_log_pb2 as pb\n"
        "from verifier import verify\n"
        "from tests.test_properties_hegemony import game_params\n"
        "print(' '.join(verify(play_game(*game_params(i), mode=pb.MODE_HEGEMONY)).final_digest.hex() "
        "for i in range(6)))\n"
    ), "4242")


# Qun skills a bot uses by a decision of its own (InvokeSkill or a virtual card; 断肠 by its ChooseOption); the
# others (完杀, 帷幕, 马术, 名士, 随势, 无双) are passive.
QUN_USED = ("jijiu", "qingnang", "heg_lijian", "biyue", "luanji", "shuangxiong", "luanwu", "mengjin", "leiji",
            "guidao", "beige", "xiongyi", "lirang", "shuangren", "sijian", "kuangfu", "huoshui", "qingcheng")


def test_bots_use_every_qun_skill() -> None:
    used: Counter[str] = Counter()
    for log in corpus():
        for ev in log.events:
            kind = ev.WhichOneof("kind")
            if kind == "invoke_skill":
                used[ev.invoke_skill.skill] += 1
            elif kind in ("use_card", "respond"):
                card = getattr(ev, kind).card
                if card.WhichOneof("kind") == "virtual":
                    used[card.virtual.skill] += 1
    assert [s for s in QUN_USED if not used[s]] == [], used


def test_rotating_deal_picks_every_general_ten_times_in_forty_games() -> None:
    """docs/rng.md#hegemony-rotating-deal: 40 consecutive seeds at 8 players (the cheats run's games), each seat's
    pick by the self-play bot: every one of the 60 generals is picked in at least 10 games."""
    pool = implemented(Ruleset(packages(make_header(1, 8))))
    assert len(pool) == 60
    for first in (1, 5000, 123456789):
        picked: Counter[str] = Counter()
        for seed in range(first, first + 40):
            bot = HegemonyBot(Stream(seed, "bots"))
            for seat, candidates in deal_candidates(make_header(seed, 8), pool).items():
                pick = bot.pick_two(pick_request(seat, candidates)).pick_general
                assert pick.general in candidates and pick.deputy in candidates
                picked.update((pick.general, pick.deputy))
        assert len(picked) == 60 and min(picked.values()) >= 10, (first, picked.most_common()[-3:])
