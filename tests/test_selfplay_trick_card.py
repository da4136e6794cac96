"""The self-play bots name the delayed trick (`Respond.trick_card`) when they play 无懈可击 in a window
opened for a delayed trick being judged, so the generals bot plays 无懈可击 in judgment phases too.

Two delayed tricks in one judgment area share their target: a 无懈可击 that nullifies the second right
after a chain on the first ended (nullified) names the same target as one continuing that chain, and only
`trick_card` tells them apart (docs/log-format.md)."""

from __future__ import annotations

from functools import cache

import pytest

from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from tests import test_generals_properties, test_properties
from verifier import verify
from verifier.replay import default_ruleset
from verifier.setup import new_game

# (seed, players, generals, event index): games in which a 无懈可击 on one delayed trick directly follows
# one on another delayed trick in the same judgment area — the case `trick_card` disambiguates.
SWITCHES = [(106, 5, False, 415), (3845, 6, True, 345)]


def nullifications(log: pb.GameLog) -> list[tuple[int, pb.Respond, bool]]:
    """Every 无懈可击 played as (event index, respond, in a judgment phase)."""
    game = new_game(log.header, default_ruleset(log.header))
    out = []
    phase = None
    for i, ev in enumerate(log.events):
        kind = ev.WhichOneof("kind")
        if kind == "phase_start":
            phase = ev.phase_start.phase
        elif kind == "respond" and ev.respond.card.HasField("id") and \
                game.cards[ev.respond.card.id].name == "nullification":
            out.append((i, ev.respond, phase == pb.PHASE_JUDGMENT))
    return out


@pytest.mark.parametrize("generals", [False, True], ids=["standard", "generals"])
def test_judgment_phase_nullifications_name_their_trick(generals: bool) -> None:
    corpus = test_generals_properties.corpus() if generals else test_properties.corpus()
    judged = 0
    games = 0
    for log in corpus:
        played = nullifications(log)
        for i, r, in_judgment in played:
            # trick_card exactly in the judgment-phase windows (the only windows for a delayed trick).
            assert r.HasField("trick_card") == in_judgment, (log.header.seed, i)
        found = sum(in_judgment for _, _, in_judgment in played)
        judged += found
        games += bool(found)
    # The generals bot used to stay out of judgment-phase 无懈可击; now both bots play them.
    assert judged >= 50 and games >= 30, (judged, games)


def test_generals_corpus_verifies_clean_with_judgment_phase_nullifications() -> None:
    with_trick_card = [log for log in test_generals_properties.corpus()
                       if any(in_judgment for _, _, in_judgment in nullifications(log))]
    assert len(with_trick_card) >= 30
    for log in with_trick_card:
        replay = verify(log)
        assert replay.violation_count == 0, (log.header.seed, list(replay.violation_codes))
        assert replay.followed and replay.result.finished


@cache
def switch_game(seed: int, players: int, generals: bool) -> pb.GameLog:
    return play_game(seed, players, generals=generals)


@pytest.mark.parametrize(("seed", "players", "generals", "index"), SWITCHES)
def test_second_delayed_trick_nullified_after_a_chain_on_the_first(seed: int, players: int, generals: bool,
                                                                   index: int) -> None:
    log = switch_game(seed, players, generals)
    assert log.events[index - 1].HasField("respond") and log.events[index].HasField("respond")
    first, second = log.events[index - 1].respond, log.events[index].respond
    assert first.target == second.target and first.trick_card != second.trick_card
    replay = verify(log)
    assert replay.violation_count == 0, list(replay.violation_codes)
    assert replay.followed and replay.result.finished
    # Without trick_card the second 无懈可击 would be read as continuing the chain on the first trick.
    stripped = pb.GameLog()
    stripped.CopyFrom(log)
    for ev in stripped.events:
        if ev.HasField("respond"):
            ev.respond.ClearField("trick_card")
    assert verify(stripped).violation_count > 0
