"""FreeKill logs a card used with no target as ``#UseCard`` (not ``#UseCardToTargets``): a 桃 at full HP,
which a modified client can send and FreeKill's server carries out. The importer must still see the use."""

from __future__ import annotations

import json
from pathlib import Path

from importers.freekill import import_freekill
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

GAME = Path(__file__).resolve().parent / "data" / "freekill" / "fk_rand_p4_35.jsonl"
PEACH_USE_SEQ = 270  # seat 2 uses 桃 (FreeKill id 51) on itself, logged with its target


def _lines(rewrite: bool) -> bytes:
    out = []
    for line in GAME.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if rewrite and obj.get("seq") == PEACH_USE_SEQ:
            assert obj["data"] == {"from": 2, "type": "#UseCardToTargets", "card": [51], "to": [2]}
            obj["data"] = {"from": 2, "type": "#UseCard", "card": [51]}
        out.append(json.dumps(obj, ensure_ascii=False))
    return ("\n".join(out) + "\n").encode()


def test_a_use_logged_without_targets_is_the_same_decision() -> None:
    """The use keeps the targets FreeKill logged (the rules judge them, not the importer): the 桃 logged on its user
    names them; logged with none, it names none, which the rules take as its user. Every other event is the same,
    and so is the verdict."""
    logged_with_target = import_freekill(_lines(False), "a.jsonl")
    logged_without = import_freekill(_lines(True), "b.jsonl")
    with_target, without = list(logged_with_target.log.events), list(logged_without.log.events)
    assert len(without) == len(with_target)
    differ = [i for i, (a, b) in enumerate(zip(with_target, without, strict=True)) if a != b]
    assert len(differ) == 1
    peach = with_target[differ[0]].use_card
    assert list(peach.targets) == [peach.seat] and not without[differ[0]].use_card.targets
    assert without[differ[0]].use_card.card == peach.card
    replays = [verify(logged_without.log), verify(logged_with_target.log)]
    for replay in replays:
        assert replay.followed and replay.result.finished
        assert [v.code for a in replay.annotations for v in a.violations] == []
    assert replays[0].final_digest == replays[1].final_digest
    assert isinstance(logged_without.log, pb.GameLog)
