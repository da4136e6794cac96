"""A FreeKill room's tap lines imported whole (importers/freekill/taproom.py): the tap's check records read and
refused when malformed, the seating and result FreeKill announced, and hostile input (cut, garbled, mixed rooms, huge
numbers, compressed bombs) refused with ImportFailure, never another exception."""

from __future__ import annotations

import contextlib
import gzip
import lzma
import random
import re
from pathlib import Path

import pytest

from importers import RecordError, judging_importer
from importers.freekill.convert import ImportFailure
from importers.freekill.taproom import import_tap_room, judged_room, looks_like_tap, timeline

DATA = Path(__file__).resolve().parent / "data" / "freekill"
MAX = 16 << 20


def tap(name: str) -> bytes:
    return lzma.decompress((DATA / name).read_bytes())


def test_the_checks_seats_and_result_of_a_room_our_engine_cannot_replay() -> None:
    judged = judged_room(tap("tap_checked_ext.log.xz"), "ext.log", max_bytes=MAX)
    assert judged.log is None and judged.server is not None
    server = judged.server
    assert "card id 161" in server.not_replayed and server.format == "fktap"
    assert [(c.reply, c.code) for c in server.checks] == [(218, "FK_NOT_OFFERED"), (297, "FK_NOT_FEASIBLE"),
                                                          (426, "FK_NOT_OFFERED")]
    assert [c.seat for c in server.checks] == [0, 0, 1] and not any(c.HasField("event") for c in server.checks)
    assert server.client_replies == (218, 297, 426)
    assert [s.general for s in server.seats] == ["sunce", "xuhuang", "xiahouyuan", "ex__liubei", "luji"]
    assert (server.finished, server.side, server.winners) == (True, 2, (1, 4))
    assert server.records == 10158 and server.data.count(b"\n") == 10158


def test_a_room_our_engine_replays_has_each_check_at_its_event() -> None:
    judged = judged_room(tap("tap_checked_std.log.xz"), "std.log", max_bytes=MAX)
    assert judged.log is not None and judged.server is not None and not judged.server.not_replayed
    events = {c.reply: c.event for c in judged.server.checks}
    assert events == {190: 6, 220: 8, 560: 30, 1157: 70, 1906: 119}
    assert judged.reply_events[220] == 8


def test_the_format_is_told_from_the_content_and_compression() -> None:
    text = tap("tap_checked_std.log.xz")
    assert looks_like_tap(text, MAX) and looks_like_tap(gzip.compress(text), MAX)
    assert looks_like_tap((DATA / "tap_checked_std.log.xz").read_bytes(), MAX)
    assert not looks_like_tap(b'{"seq": 0, "kind": "meta"}\n', MAX) and not looks_like_tap(b"", MAX)
    # a transcript goes to the plain importer, as before
    plain = judging_importer("freekill", MAX)((DATA / "transcripts" / "fk_rand_p4_35.jsonl.xz").read_bytes(), "t")
    assert plain.log is not None and plain.server is None


def test_the_timeline_says_each_record_in_words() -> None:
    entries = timeline(import_tap_room(tap("tap_checked_ext.log.xz"), max_bytes=MAX).text)
    assert len(entries) == 10158 and entries[0][1] == "meta"
    assert entries[218] == (219, "check", "FreeKill's rules on reply 218 (PlayCard, player 3, client): refused "
                                          "FK_NOT_OFFERED: card 22 is not offered")


@pytest.mark.parametrize(("edit", "says"), [
    (lambda t: t.replace(b'"verdict":"refused"', b'"verdict":"maybe"', 1), "a check's verdict is one of"),
    (lambda t: re.sub(rb'"reply":218,', b'"reply":99999,', t, count=1), "names the seq of the reply it judges"),
    (lambda t: t.replace(b'"code":"FK_NOT_OFFERED",', b"", 1), "a refused check needs its 'code'"),
    (lambda t: re.sub(rb'("kind":"check","to":)3', rb'\1"x"', t, count=1), "a check's 'to' must be a player id"),
    (lambda t: t + tap("tap_checked_std.log.xz")[:2000], "one room's lines are imported at a time"),
    (lambda t: b"\n".join(x for x in t.split(b"\n") if b'"seq":300,' not in x), "record 300 is missing"),
    (lambda t: t.replace(b'"seq":5,', b'"seq":' + b"9" * 400 + b",", 1), "an integer of 400 digits"),
    (lambda t: t[:5000].replace(b"SGSV1 ", b"SGSV2 "), "no tap record in the input"),
    (lambda t: t[:3000] + b"\xff\xfe\n", "is not UTF-8 text"),
])
def test_a_malformed_room_is_refused_with_its_reason(edit: object, says: str) -> None:
    data = edit(tap("tap_checked_ext.log.xz"))  # type: ignore[operator]
    with pytest.raises(RecordError, match=re.escape(says)):
        judging_importer("freekill", MAX)(data, "bad.log")


def test_garbled_rooms_give_import_failures_only() -> None:
    rng = random.Random(7)
    text = tap("tap_checked_ext.log.xz")[:400_000]
    lines = text.split(b"\n")
    for _ in range(150):
        mutated = list(lines)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(mutated))
            line = mutated[i]
            cut = rng.randrange(len(line) + 1)
            mutated[i] = rng.choice([line[:cut], line[:cut] + bytes(rng.randrange(256) for _ in range(5)),
                                     line.replace(b"1", b"-1", 1), line.replace(b'"', b"", 1), b""])
        with contextlib.suppress(ImportFailure):  # (any other exception fails the test)
            judged_room(b"\n".join(mutated), "garbled.log", max_bytes=MAX)


def test_a_compressed_bomb_is_refused_by_size() -> None:
    head = b"".join(tap("tap_checked_std.log.xz").splitlines(keepends=True)[:3])
    bomb = gzip.compress(head + b"\n" * (20 << 20))
    with pytest.raises(RecordError, match="over"):
        judging_importer("freekill", 4 << 20)(bomb, "bomb.log.gz")
