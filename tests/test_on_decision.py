"""Verifier.on_decision: a tool sees each decision of the log just before the engine takes it, with the request
it answers — every decision that is not a decline, once, in order; declines and outcomes never."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients.selfplay import play_game
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import Verifier, load_log
from verifier.engine.requests import DECISION_KINDS, Request

GOLDEN = Path(__file__).resolve().parent / "golden" / "logs"


@pytest.mark.parametrize("name", ["scenario-generals-hujia.json", "selfplay-hegemony-p4-s0.json"])
def test_every_decision_but_a_decline_is_shown_once_in_order_with_its_request(name: str) -> None:
    log = load_log((GOLDEN / name).read_bytes())
    seen: list[tuple[pb.Event, Request]] = []
    verifier = Verifier(log.header)
    verifier.on_decision = lambda ev, req: seen.append((ev, req))
    for ev in log.events:
        verifier.follow((ev,))
    replay = verifier.finish()
    assert replay.followed
    decisions = [ev for ev in log.events if ev.WhichOneof("kind") in DECISION_KINDS]
    declines = [ev for ev in decisions if ev.HasField("decline")]
    assert declines, "the game has declines to leave out"
    assert [ev for ev, _ in seen] == [ev for ev in decisions if not ev.HasField("decline")]
    # Each is shown with the request it answers (a card answer's fit needs its card's name: not checked here).
    for ev, req in seen:
        kind = ev.WhichOneof("kind")
        assert kind == "respond" or req.fits(ev, kind, getattr(ev, kind).seat, None), (kind, req)


def test_a_decision_out_of_turn_is_not_shown() -> None:
    log = play_game(22, 4)
    seen: list[pb.Event] = []
    verifier = Verifier(log.header)
    verifier.on_decision = lambda ev, req: seen.append(ev)
    bad = pb.Event()
    bad.end_play_phase.seat = 3  # (the starting hands are still being dealt: nothing waits for seat 3)
    verifier.follow([*log.events[:3], bad])
    out_of_turn = [(a.index, [v.code for v in a.violations]) for a in verifier.finish().annotations
                   if a.status == apb.STATUS_ILLEGAL]
    assert out_of_turn == [(3, ["OUT_OF_TURN"])]
    assert seen == []
