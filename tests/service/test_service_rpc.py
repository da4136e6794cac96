"""Every RPC over real gRPC on loopback, on SQLite and PostgreSQL: success paths, idempotent
resubmission, a live game whose cheat is reported mid-stream, concurrent clients, restart."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from clients.client import ListFilter, Metadata, NotFound, VerifierClient
from clients.selfplay import play_game
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from tests.service.conftest import BACKENDS, fresh_database, server_config

# A hand-made 4-seat game: seat 0 plays 杀 on seat 1 (answered by 闪), then a second 杀 in the
# same play phase — SLASH_LIMIT at event 2.
SECOND_SLASH = {
    "header": {
        "ruleset": "identity/1", "mode": "MODE_IDENTITY", "seed": "7",
        "options": {"generals": "GENERALS_MODE_WHITE"},
        "seats": [{"role": "ROLE_LORD", "player": "ann"}, {"role": "ROLE_REBEL", "player": "bo"},
                  {"role": "ROLE_LOYALIST", "player": "cy"}, {"role": "ROLE_SPY", "player": "di"}],
        "setup": {
            "stackedTop": True,
            "startingHands": [
                {"seat": 0, "cards": [14, 16, 17, 57]}, {"seat": 1, "cards": [84, 85, 86, 88]},
                {"seat": 2, "cards": [59, 61, 65, 67]}, {"seat": 3, "cards": [18, 19, 20, 21]}],
            "drawPile": [30, 33],
        },
    },
    "events": [
        {"useCard": {"seat": 0, "card": {"id": 14}, "targets": [1]}},
        {"respond": {"seat": 1, "card": {"id": 84}}},
        {"useCard": {"seat": 0, "card": {"id": 16}, "targets": [1]}},
        {"respond": {"seat": 1, "card": {"id": 85}}},
        {"endPlayPhase": {"seat": 0}},
    ],
}


def second_slash_log() -> pb.GameLog:
    return json_format.ParseDict(SECOND_SLASH, pb.GameLog())


def fresh_game(seed: int, label: str) -> pb.GameLog:
    """A self-play game made unique to one test (the recorder is part of the log's hash)."""
    log = play_game(seed, 5)
    log.header.recorder = label
    return log


@pytest.fixture
def client(service: BackgroundServer) -> Iterator[VerifierClient]:
    with VerifierClient(service.address, timeout=60) as c:
        yield c


def test_health_and_reflection(service: BackgroundServer, client: VerifierClient) -> None:
    assert client.health() == "SERVING"
    assert client.health("sgsverify.v1.VerifierService") == "SERVING"
    # what `grpcurl -plaintext HOST:PORT list` asks
    services = set(ProtoReflectionDescriptorDatabase(client.channel).get_services())
    assert {"sgsverify.v1.VerifierService", "grpc.health.v1.Health"} <= services


def test_verify_log_message_and_bytes(client: VerifierClient, games: list[pb.GameLog]) -> None:
    log = fresh_game(11, "verify")
    sub = client.verify(log, Metadata(tournament="t-verify", round="2", table="7", submitter="alice"))
    assert sub.created and len(sub.id) == 64
    assert sub.replay.log_sha256 == sub.id and sub.replay.violation_count == 0
    assert len(sub.replay.annotations) >= len(log.events)
    assert sub.info.metadata.table == "7" and sub.info.event_count == len(log.events)
    assert sub.info.result.finished and sub.info.submitted_at.seconds > 0
    # the same log as JSON bytes is the same replay
    again = client.verify(json_format.MessageToJson(log).encode(), summary_only=True)
    assert (again.id, again.created) == (sub.id, False)
    assert len(again.replay.annotations) == 0 and again.replay.violation_count == 0
    assert again.info.metadata.tournament == "t-verify"  # the first submission's metadata


def test_violation_is_a_result(client: VerifierClient) -> None:
    sub = client.verify(second_slash_log(), Metadata(tournament="t-cheat"))
    assert sub.replay.violation_codes == ["SLASH_LIMIT"]
    flagged = [a for a in sub.replay.annotations if a.violations]
    assert flagged[0].index == 2
    # an unusable header is also a result, not an error
    bad = second_slash_log()
    del bad.header.seats[3:]
    res = client.verify(bad, Metadata(tournament="t-cheat"))
    assert res.replay.header_violations and not res.replay.followed


def test_upload_stream(client: VerifierClient) -> None:
    log = fresh_game(12, "upload")
    sub = client.upload(log, Metadata(tournament="t-upload"), batch_size=64)
    assert sub.created and sub.info.event_count == len(log.events)
    whole = client.verify(log)
    assert (whole.id, whole.created) == (sub.id, False)
    assert whole.replay == sub.replay


def test_live_stream_reports_the_second_slash_before_the_stream_ends(client: VerifierClient) -> None:
    log = second_slash_log()
    log.header.recorder = "live"
    outbox: queue.Queue[list[pb.Event] | None] = queue.Queue()

    def batches() -> Iterator[list[pb.Event]]:
        while (batch := outbox.get()) is not None:
            yield batch

    outbox.put(list(log.events[:2]))
    updates = client.live(log.header, batches(), Metadata(tournament="t-live"))
    assert next(updates).events_received == 0  # the answer to the header
    first = next(updates)
    assert first.events_received == 2 and not first.violations
    outbox.put([log.events[2]])  # the second 杀
    second = next(updates)
    assert [(a.index, v.code) for a, v in second.violations] == [(2, "SLASH_LIMIT")]
    assert second.finished is None  # the game goes on: the stream is still open
    outbox.put(list(log.events[3:]))
    outbox.put(None)
    rest = list(updates)
    final = rest[-1].finished
    assert final is not None and final.stored and final.created
    assert final.info.violation_codes == ["SLASH_LIMIT"]
    stored = client.get(final.info.id, include_log=True)
    assert stored.replay.violation_codes == ["SLASH_LIMIT"]
    assert stored.log == log


def test_live_game_matches_offline_and_can_be_discarded(client: VerifierClient) -> None:
    log = fresh_game(13, "live")
    updates = list(client.live(log.header, log.events, batch_size=50, discard=True))
    streamed = [a for u in updates for a in u.annotations]
    final = updates[-1].finished
    assert final is not None and not final.stored and final.info.id == ""
    assert updates[-1].game_over
    offline = client.verify(log)
    assert offline.created  # the discarded live game was not stored
    assert streamed == list(offline.replay.annotations)


def test_get_show_and_delete(client: VerifierClient) -> None:
    sub = client.verify(fresh_game(14, "get"), Metadata(tournament="t-get"))
    got = client.get(sub.id[:12], include_log=True, include_original=True)
    assert got.info.id == sub.id and got.replay == sub.replay
    assert pb.GameLog.FromString(got.original) == got.log
    client.delete(sub.id)
    with pytest.raises(NotFound):
        client.get(sub.id)
    with pytest.raises(NotFound):
        client.delete(sub.id)


def test_house_role_table_notice_and_origin_are_stored(client: VerifierClient) -> None:
    """A log from another engine: its header notice is stored with the replay (and is no violation),
    its origin with the log; both come back from GetReplay and show up in `show`."""
    from clients.commands.service import replay_lines
    from tests.test_header_additions import freekill_origin, scenario_log

    log = scenario_log("house_roles_10p_freekill")
    log.header.origin.CopyFrom(freekill_origin("freekill-fkrep"))
    sub = client.verify(json_format.MessageToJson(log).encode(), Metadata(tournament="t-house"))
    assert sub.created and [n.code for n in sub.replay.header_notices] == ["HOUSE_ROLE_TABLE"]
    assert sub.replay.violation_count == 0 and sub.info.violation_count == 0 and not sub.info.violation_codes
    got = client.get(sub.id, include_log=True)
    assert got.replay == sub.replay and got.log == log
    assert got.log.header.origin.engine_version == "88a912f1"
    lines = list(replay_lines(got))
    assert any(line.startswith("  origin: freekill 88a912f1, format freekill-fkrep") for line in lines)
    assert any(line.startswith("  header notice (not a violation): HOUSE_ROLE_TABLE: ") for line in lines)
    assert [i.id for i in client.list(ListFilter(tournament="t-house", has_violations=False))] == [sub.id]
    # streamed live, the stored replay carries it too
    log.header.origin.format = "freekill-transcript"
    final = list(client.live(log.header, log.events, batch_size=4))[-1].finished
    assert final is not None and final.stored
    live = client.get(final.info.id)
    assert [n.code for n in live.replay.header_notices] == ["HOUSE_ROLE_TABLE"]
    assert live.replay.final_digest == sub.replay.final_digest  # another format, the same game


def test_list_filters_and_paging(client: VerifierClient) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    ids = []
    for i in range(5):
        log = fresh_game(20 + i, "list")
        log.header.seats[0].player = f"star-{i % 2}"
        if i == 3:
            log.events.add().end_play_phase.seat = 0  # after the game is over: a violation
        ids.append(client.verify(log, Metadata(tournament="t-list", round=str(i))).id)
    everything = ListFilter(tournament="t-list")
    assert [i.id for i in client.list(everything, page_size=2)] == ids[::-1]
    page = client.list_page(everything, page_size=2)
    assert page.total_count == 5 and page.next_page_token
    assert [i.id for i in client.list(ListFilter(tournament="t-list", player="star-1"))] == [ids[3], ids[1]]
    flagged = list(client.list(ListFilter(tournament="t-list", has_violations=True)))
    assert [i.id for i in flagged] == [ids[3]]
    code = flagged[0].violation_codes[0]
    assert [i.id for i in client.list(ListFilter(tournament="t-list", violation_code=code))] == [ids[3]]
    assert len(list(client.list(ListFilter(tournament="t-list", has_violations=False)))) == 4
    assert len(list(client.list(ListFilter(tournament="t-list", submitted_after=before)))) == 5
    assert not list(client.list(ListFilter(tournament="t-list", submitted_before=before)))
    assert [i.id for i in client.list(ListFilter(tournament="t-list", round="4"))] == [ids[4]]


def test_concurrent_clients_lose_nothing(service: BackgroundServer) -> None:
    logs = [fresh_game(40 + i, "concurrent") for i in range(12)]

    def submit(index: int) -> str:
        with VerifierClient(service.address, timeout=120) as c:
            log = logs[index]
            meta = Metadata(tournament="t-concurrent", submitter=f"client-{index % 4}")
            if index % 3 == 0:
                return c.upload(log, meta, batch_size=100).id
            if index % 3 == 1:
                return c.verify(log.SerializeToString(), meta).id
            updates = list(c.live(log.header, log.events, meta, batch_size=100))
            assert updates[-1].finished is not None
            return updates[-1].finished.info.id

    with ThreadPoolExecutor(6) as pool:
        ids = list(pool.map(submit, range(len(logs))))
        again = list(pool.map(submit, range(len(logs))))  # everything twice, at once
    assert ids == again and len(set(ids)) == len(logs)
    with VerifierClient(service.address) as c:
        listed = {i.id for i in c.list(ListFilter(tournament="t-concurrent"))}
    assert listed == set(ids)


@pytest.mark.parametrize("backend", BACKENDS)
def test_restart_keeps_the_data(backend: str, tmp_path: Path) -> None:
    url, db = fresh_database(backend, tmp_path)
    try:
        config = server_config(url, tmp_path)
        log = fresh_game(60, "restart")
        with BackgroundServer(config) as first, VerifierClient(first.address) as c:
            sub = c.verify(log, Metadata(tournament="t-restart"))
        with BackgroundServer(config) as second, VerifierClient(second.address) as c:
            got = c.get(sub.id, include_log=True)
            assert got.replay == sub.replay and got.log == log
            assert not c.verify(log).created
    finally:
        if db is not None:
            db.drop()


def test_grpc_stub_directly(service: BackgroundServer) -> None:
    """The contract works without our client (what another language would do)."""
    with grpc.insecure_channel(service.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        res = stub.ListReplays(spb.ListReplaysRequest(page_size=1), timeout=10)
        assert res.total_count >= 0
