"""Malformed input: bytes that are no log, logs that name seats or cards that are not there,
events that are empty or answer nothing, and a 10 MB log of junk.

Each gives a clear verdict — a ``LogFormatError`` from ``verifier.load_log``, header violations,
or MALFORMED / WRONG_TIMING annotations at the right index — and never a traceback: an engine
fault would show as an "internal error" stop, which every test here rules out.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from clients import cli
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import LogFormatError, load_log, logio, verify

MB = 1 << 20
BIG = 4294967295  # the largest uint32

HEADER: dict[str, Any] = {
    "ruleset": "identity/1", "mode": "MODE_IDENTITY", "seed": "7",
    "options": {"generals": "GENERALS_MODE_WHITE"},
    "seats": [{"role": "ROLE_LORD"}, {"role": "ROLE_REBEL"}, {"role": "ROLE_LOYALIST"}, {"role": "ROLE_SPY"}],
    "setup": {
        "stackedTop": True,
        "startingHands": [
            {"seat": 0, "cards": [14, 16, 17, 57]},
            {"seat": 1, "cards": [18, 19, 84, 85]},
            {"seat": 2, "cards": [59, 61, 65, 67]},
            {"seat": 3, "cards": [20, 21, 86, 88]},
        ],
        "drawPile": [30, 33],
    },
}


def junk(size: int, label: bytes = b"junk") -> bytes:
    """Deterministic pseudo-random bytes."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += hashlib.sha256(label + i.to_bytes(8, "little")).digest()
        i += 1
    return bytes(out[:size])


def make_log(events: list[dict[str, Any]], header: dict[str, Any] | None = None) -> pb.GameLog:
    return json_format.ParseDict({"header": header or HEADER, "events": events}, pb.GameLog())


def judged(log: pb.GameLog) -> apb.AnnotatedReplay:
    """Verify, and check the verdict is a verdict: no engine fault, one annotation per event."""
    replay = verify(log)
    assert "internal error" not in replay.stopped_reason, replay.stopped_reason
    assert {a.index for a in replay.annotations if not a.derived} == set(range(len(log.events)))
    return replay


def violations(replay: apb.AnnotatedReplay) -> list[tuple[int, str]]:
    return [(a.index, v.code) for a in replay.annotations if not a.derived for v in a.violations]


def status_of(replay: apb.AnnotatedReplay, index: int) -> int:
    (ann,) = [a for a in replay.annotations if not a.derived and a.index == index]
    return ann.status


def valid_binary_log() -> bytes:
    """A clean log: the lord's 杀 hits seat 1, the lord discards 1 of its 5 cards."""
    events: list[dict[str, Any]] = [
        {"useCard": {"seat": 0, "card": {"id": 14}, "targets": [1]}},
        {"damage": {"source": 0, "target": 1, "amount": 1, "hpAfter": 3}},
        {"endPlayPhase": {"seat": 0}},
        {"chooseCards": {"seat": 0, "cards": [16]}},
    ]
    return make_log(events).SerializeToString(deterministic=True)


# ---------------------------------------------------------------------------------- unreadable bytes


@pytest.mark.parametrize("data", [
    b"",
    b"\x00",
    b"\xff" * 100,
    b"\x83\x01" * 100_000,  # unknown groups nested far too deep
    junk(1000),
    junk(10 * MB),
    b"{",
    b"{" + junk(10 * MB)[1:],  # looks like JSON, is not UTF-8
    b'{"header": 5}',
    b'{"header": {}, "events": [{"noSuchKind": {}}]}',
    b'{"header": {"seed": "-1"}}',
    b'{"a":' * 100_000,  # nested beyond the JSON parser's depth
    b'{"events": [{"useCard": {"seat": "zero"}}]}',
], ids=["empty", "nul", "ff", "deep-groups", "junk-1k", "junk-10MB", "brace", "json-junk-10MB", "header-int",
        "unknown-kind", "negative-seed", "deep-json", "string-seat"])
def test_unreadable_bytes_raise_log_format_error(data: bytes) -> None:
    with pytest.raises(LogFormatError):
        load_log(data)


def test_over_the_size_limit_is_a_log_format_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logio, "MAX_LOG_BYTES", 1000)
    with pytest.raises(LogFormatError, match="limit"):
        load_log(valid_binary_log() + b"\x00" * 1000)


def test_the_valid_log_is_clean() -> None:
    assert judged(load_log(valid_binary_log())).violation_count == 0


def test_truncated_binary_logs() -> None:
    """A valid log cut anywhere is either unreadable or judged without an engine fault."""
    data = valid_binary_log()
    readable = 0
    for cut in range(len(data)):
        try:
            log = load_log(data[:cut], "binary")
        except LogFormatError:
            continue
        readable += 1
        judged(log)
    assert readable > 0  # cuts at field boundaries parse: shorter logs, still judged


def test_corrupted_binary_logs() -> None:
    """Bytes of a valid log overwritten one at a time: unreadable, or judged without an engine fault."""
    data = valid_binary_log()
    for i in range(len(data)):
        for byte in (0x00, 0x7F, 0xFF, data[i] ^ 0x55):
            mutated = data[:i] + bytes([byte]) + data[i + 1:]
            try:
                log = load_log(mutated, "binary")
            except LogFormatError:
                continue
            judged(log)


def test_truncated_json_logs() -> None:
    text = json.dumps({"header": HEADER, "events": [{"endPlayPhase": {"seat": 0}}]}).encode()
    for cut in range(1, len(text) - 1, 7):
        with pytest.raises(LogFormatError):
            load_log(text[:cut])


def test_json_without_header_is_a_header_verdict() -> None:
    log = load_log(b'{"events": [{"endPlayPhase": {"seat": 0}}]}')
    replay = judged(log)
    assert replay.header_violations
    assert not replay.followed
    assert [a.status for a in replay.annotations] == [apb.STATUS_NOT_CHECKED]


# ---------------------------------------------------------------------------------- bad headers


@pytest.mark.parametrize("seats", [0, 3, 11, 1000])
def test_seat_counts_outside_4_to_10(seats: int) -> None:
    header = dict(HEADER, seats=[{}] * seats)
    header.pop("setup")
    replay = judged(make_log([{"endPlayPhase": {"seat": 0}}], header))
    assert [v.code for v in replay.header_violations] == ["BAD_HEADER"]
    assert not replay.followed


def test_setup_with_unknown_card_is_bad_setup() -> None:
    header = json.loads(json.dumps(HEADER))
    header["setup"]["drawPile"] = [30, BIG]
    replay = judged(make_log([], header))
    assert [v.code for v in replay.header_violations] == ["BAD_SETUP"]


# ---------------------------------------------------------------------------------- unknown cards


@pytest.mark.parametrize("event", [
    {"useCard": {"seat": 0, "card": {"id": 999}, "targets": [1]}},
    {"useCard": {"seat": 0, "card": {"id": 0}, "targets": [1]}},
    {"useCard": {"seat": 0, "card": {"id": 109}, "targets": [1]}},  # a 军争 card: not in this game's deck
    {"useCard": {"seat": 0, "card": {"virtual": {"name": "slash", "subcards": [14, BIG], "skill": "spear"}},
                 "targets": [1]}},
    {"respond": {"seat": 1, "card": {"id": 999}}},
    {"chooseCards": {"seat": 0, "cards": [999]}},
    {"invokeSkill": {"seat": 0, "skill": "spear", "cards": [999]}},
    {"drawCards": {"seat": 0, "cards": [30, 999], "reason": "DRAW_REASON_DRAW_PHASE"}},
    {"judgment": {"seat": 0, "card": 999, "reason": "indulgence"}},
    {"cardsMoved": {"cards": [999], "fromSeat": 0, "fromZone": "ZONE_HAND", "toZone": "ZONE_DISCARD_PILE"}},
    {"reshuffle": {"order": [999]}},
    {"reveal": {"cards": [999]}},
], ids=lambda e: next(iter(e)))
def test_unknown_card_ids_are_malformed(event: dict[str, Any]) -> None:
    replay = judged(make_log([event, {"endPlayPhase": {"seat": 0}}]))
    assert violations(replay) == [(0, "UNKNOWN_CARD")]
    assert status_of(replay, 0) == apb.STATUS_MALFORMED
    assert not replay.annotations[-1].violations  # the game goes on: the lord's end of the play phase is fine


# ---------------------------------------------------------------------------------- seats out of range


@pytest.mark.parametrize("event", [
    {"useCard": {"seat": 4, "card": {"id": 14}, "targets": [1]}},
    {"useCard": {"seat": BIG, "card": {"id": 14}, "targets": [1]}},
    {"useCard": {"seat": 0, "card": {"id": 14}, "targets": [9]}},
    {"useCard": {"seat": 0, "card": {"id": 14}, "targets": [1, BIG]}},
    {"respond": {"seat": 1, "card": {"id": 84}, "target": 7}},
    {"decline": {"seat": 5}},
    {"chooseCards": {"seat": 8, "cards": [14]}},
    {"endPlayPhase": {"seat": 4}},
    {"turnStart": {"seat": 4, "turn": 1}},
    {"drawCards": {"seat": 9, "cards": [30, 33], "reason": "DRAW_REASON_DRAW_PHASE"}},
    {"damage": {"source": 9, "target": 1, "amount": 1, "hpAfter": 3}},
    {"damage": {"target": 9, "amount": 1, "hpAfter": 3}},
    {"death": {"seat": 1, "killer": 6, "role": "ROLE_REBEL"}},
    {"cardsMoved": {"cards": [14], "fromSeat": 0, "fromZone": "ZONE_HAND", "toSeat": 5, "toZone": "ZONE_HAND"}},
    {"gameOver": {"side": "SIDE_LORD", "winners": [0, 12]}},
], ids=lambda e: next(iter(e)))
def test_seats_out_of_range_are_malformed(event: dict[str, Any]) -> None:
    replay = judged(make_log([event, {"endPlayPhase": {"seat": 0}}]))
    assert violations(replay) == [(0, "SEAT_OUT_OF_RANGE")]
    assert status_of(replay, 0) == apb.STATUS_MALFORMED


# ---------------------------------------------------------------------------------- empty and aimless events


def test_empty_event_and_decisions_without_a_card() -> None:
    events: list[dict[str, Any]] = [
        {},
        {"useCard": {"seat": 0, "targets": [1]}},
        {"respond": {"seat": 1}},
        {"useCard": {"seat": 0, "card": {"id": 14}, "targets": [1]}},
        {"respond": {"seat": 1}},  # the seat asked, but no card named
        {"respond": {"seat": 1, "card": {"id": 84}}},
        {"endPlayPhase": {"seat": 0}},
    ]
    replay = judged(make_log(events))
    assert violations(replay) == [(0, "MALFORMED_EVENT"), (1, "MALFORMED_EVENT"), (2, "MALFORMED_EVENT"),
                                  (4, "MALFORMED_EVENT")]
    assert all(status_of(replay, i) == apb.STATUS_MALFORMED for i in (0, 1, 2, 4))
    assert replay.followed


@pytest.mark.parametrize("event", [
    {"respond": {"seat": 1, "card": {"id": 84}}},
    {"respond": {"seat": 0, "card": {"id": 57}}},
    {"decline": {"seat": 0}},
    {"decline": {"seat": 2}},
    {"chooseCards": {"seat": 0, "cards": [14]}},
], ids=["respond-other", "respond-self", "decline-self", "decline-other", "choose"])
def test_an_event_that_answers_no_request(event: dict[str, Any]) -> None:
    """In the lord's play phase nothing asks for an answer, a decline or a choice."""
    replay = judged(make_log([event, {"endPlayPhase": {"seat": 0}}]))
    assert violations(replay) == [(0, "WRONG_TIMING")]
    (ann,) = [a for a in replay.annotations if not a.derived and a.index == 0]
    assert ann.status == apb.STATUS_ILLEGAL and not ann.applied


def test_a_recorded_outcome_that_nothing_produces() -> None:
    replay = judged(make_log([{"recover": {"seat": 2, "amount": 1, "hpAfter": 5}}, {"dying": {"seat": 3}},
                              {"endPlayPhase": {"seat": 0}}]))
    assert violations(replay) == [(0, "UNEXPECTED_OUTCOME"), (1, "UNEXPECTED_OUTCOME")]


# ---------------------------------------------------------------------------------- a 10 MB log of junk


def test_ten_megabytes_of_junk_events() -> None:
    """A well-formed GameLog of 10 MB whose events are junk: the first 32 are malformed, then the log
    is declared unfollowable and every later event is annotated NOT_CHECKED."""
    filler = pb.Event()
    filler.choose_cards.seat = 0
    filler.choose_cards.cards.extend(range(1000, 4000))
    log = make_log([])
    count = 10 * MB // filler.ByteSize() + 1
    log.events.extend([filler] * count)
    data = log.SerializeToString()
    assert len(data) >= 10 * MB
    replay = judged(load_log(data))
    assert not replay.followed
    assert replay.stopped_at == 32
    assert "cannot be followed" in replay.stopped_reason
    assert violations(replay) == [(i, "UNKNOWN_CARD") for i in range(32)]
    assert all(a.status == apb.STATUS_NOT_CHECKED for a in replay.annotations if not a.derived and a.index >= 32)


def test_a_long_run_of_empty_events_stops_the_replay() -> None:
    log = make_log([])
    log.events.extend([pb.Event()] * 20_000)
    replay = judged(log)
    assert not replay.followed and replay.stopped_at == 32
    assert replay.violation_count == 32


# ---------------------------------------------------------------------------------- the CLI


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_check_exits_2_on_garbage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "garbage.pb"
    bad.write_bytes(junk(4096))
    code, out, err = run_cli(["check", str(bad)], capsys)
    assert code == 2
    assert f"{bad}: unreadable: not a binary GameLog" in err
    assert "1 unreadable" in out
    assert "Traceback" not in out + err


def test_cli_check_exits_2_on_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["check", str(tmp_path / "nope.pb"), str(tmp_path)], capsys)
    assert code == 2
    assert "2 unreadable" in out
    assert err.count("unreadable") == 2


def test_cli_check_exits_2_when_any_file_is_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.pb"
    good.write_bytes(valid_binary_log())
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"header": {"seats": [')
    code, out, _ = run_cli(["check", str(good), str(bad)], capsys)
    assert code == 2
    assert "1 readable, 1 unreadable" in out
    code, out, _ = run_cli(["check", "--json", str(good), str(bad)], capsys)
    assert code == 2
    reports = json.loads(out)
    assert [r["readable"] for r in reports] == [True, False]
    assert "not a GameLog in JSON" in reports[1]["error"]


def test_cli_check_verdicts_for_readable_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Readable but malformed is a verdict (exit 1), not unreadable (exit 2)."""
    good = tmp_path / "good.pb"
    good.write_bytes(valid_binary_log())
    code, out, _ = run_cli(["check", str(good)], capsys)
    assert code == 0, out
    malformed = tmp_path / "malformed.pb"
    malformed.write_bytes(make_log([{}, {"useCard": {"seat": 9, "card": {"id": 14}}}]).SerializeToString())
    code, out, _ = run_cli(["check", str(malformed)], capsys)
    assert code == 1
    assert "MALFORMED_EVENT" in out and "SEAT_OUT_OF_RANGE" in out
