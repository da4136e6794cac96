"""Who made a decision, through the service, on SQLite and PostgreSQL: a log whose decisions say who made them
(one breaking a rule on the player's client, one on an AI) is stored with each violation's source; the list
finds it by source (ListReplays, `sgs-verify list --source`, the viewer's ?source=), `show` and the viewer's
replay say beside each violation who decided, and count the violations by source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf import json_format

from clients.cli import main
from clients.client import ListFilter, Metadata, VerifierClient
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from storage.models import ViolationRow
from storage.store import InvalidQuery, ReplayFilter, Store
from tests.service.conftest import BACKENDS, fresh_database, server_config
from tests.test_decision_source import SECOND_SLASH, attributed_log


@pytest.fixture(scope="module", params=BACKENDS)
def viewer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp(f"source-{request.param}")
    url, pg = fresh_database(request.param, folder)
    srv = BackgroundServer(server_config(url, folder, http_address="127.0.0.1:0")).start()
    srv.db_url = url  # type: ignore[attr-defined]
    try:
        yield srv
    finally:
        srv.stop()
        if pg is not None:
            pg.drop()


@pytest.fixture(scope="module")
def stored(viewer: BackgroundServer) -> dict[str, str]:
    """The attributed log and the same game without sources (its violations are nobody's), submitted over gRPC."""
    out = {}
    uploads = {"attributed": json_format.MessageToJson(attributed_log()).encode(), "bare": SECOND_SLASH.read_bytes()}
    with VerifierClient(viewer.address, timeout=120) as client:
        for name, data in uploads.items():
            sub = client.verify(data, Metadata(tournament="src"))
            assert sub.created and sub.info.violation_count == 3
            out[name] = sub.id
    return out


def listed(client: VerifierClient, **filters: Any) -> set[str]:
    return {i.id for i in client.list(ListFilter(tournament="src", **filters))}


def test_the_list_finds_replays_by_the_source_of_their_violations(viewer: BackgroundServer,
                                                                   stored: dict[str, str]) -> None:
    with VerifierClient(viewer.address, timeout=60) as client:
        assert listed(client) == {stored["attributed"], stored["bare"]}
        assert listed(client, violation_source=pb.DECISION_SOURCE_CLIENT) == {stored["attributed"]}
        assert listed(client, violation_source=pb.DECISION_SOURCE_AI) == {stored["attributed"]}
        # (a decision made by default broke no rule here)
        assert listed(client, violation_source=pb.DECISION_SOURCE_DEFAULT) == set()
        # With a code: one violation of that code on such a decision (OUT_OF_RANGE was the AI's only).
        assert listed(client, violation_source=pb.DECISION_SOURCE_AI, violation_code="OUT_OF_RANGE") == {
            stored["attributed"]}
        assert listed(client, violation_source=pb.DECISION_SOURCE_CLIENT, violation_code="OUT_OF_RANGE") == set()
        assert listed(client, violation_source=pb.DECISION_SOURCE_CLIENT, violation_code="SLASH_LIMIT") == {
            stored["attributed"]}
        assert client.list_page(ListFilter(violation_source=pb.DECISION_SOURCE_CLIENT)).total_count == 1


def test_the_store_keeps_each_violations_source(viewer: BackgroundServer, stored: dict[str, str]) -> None:
    store = Store.open(viewer.db_url)  # type: ignore[attr-defined]
    try:
        from sqlalchemy import select

        from storage.models import Verdict

        with store.transaction() as session:
            rows = session.execute(select(ViolationRow.event_index, ViolationRow.code, ViolationRow.source)
                                   .join(Verdict, Verdict.id == ViolationRow.verdict_id)
                                   .where(Verdict.replay_id == stored["attributed"])
                                   .order_by(ViolationRow.event_index, ViolationRow.code)).all()
            assert [tuple(r) for r in rows] == [(3, "SLASH_LIMIT", pb.DECISION_SOURCE_CLIENT),
                                                (5, "OUT_OF_RANGE", pb.DECISION_SOURCE_AI),
                                                (5, "SLASH_LIMIT", pb.DECISION_SOURCE_AI)]
            bare = session.scalars(select(ViolationRow.source).join(Verdict, Verdict.id == ViolationRow.verdict_id)
                                   .where(Verdict.replay_id == stored["bare"])).all()
            assert list(bare) == [0, 0, 0]
        assert {s.id for s in store.list(ReplayFilter(violation_source=pb.DECISION_SOURCE_AI)).replays} == {
            stored["attributed"]}
        with pytest.raises(InvalidQuery, match="violation_source 7 is not a decision source"):
            store.list(ReplayFilter(violation_source=7))
    finally:
        store.close()


def test_an_unknown_source_is_refused_by_name(viewer: BackgroundServer, stored: dict[str, str]) -> None:
    from clients.client import ServiceError

    with VerifierClient(viewer.address, timeout=60) as client, pytest.raises(ServiceError,
                                                                              match="violation_source 9"):
        client.list_page(ListFilter(violation_source=9))


def test_the_command_line_lists_by_source_and_shows_who_decided(viewer: BackgroundServer, stored: dict[str, str],
                                                                capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    server = ["--server", viewer.address]
    assert main(["list", *server, "--source", "client"]) == 0
    out = capsys.readouterr().out
    assert stored["attributed"][:12] in out and stored["bare"][:12] not in out and "1 of 1 matching" in out
    assert main(["list", *server, "--source", "default"]) == 0
    assert "0 of 0 matching" in capsys.readouterr().out
    assert main(["list", *server, "--source", "robot"]) == 2  # (not a choice: usage error)
    capsys.readouterr()

    assert main(["show", *server, stored["attributed"], "--violations"]) == 0
    out = capsys.readouterr().out
    assert "  who decided: 3 violations: 1 on client replies, 2 on AI replies" in out
    lines = out.splitlines()
    assert any(line.strip().startswith("!! [client] SLASH_LIMIT seat 0") for line in lines)
    assert any(line.strip().startswith("!! [AI] OUT_OF_RANGE seat 0") for line in lines)
    assert any(line.strip().startswith("!! [AI] SLASH_LIMIT seat 0") for line in lines)
    # Streamed as a live game, each violation comes back with its decision's source.
    live_log = tmp_path / "attributed.json"
    live_log.write_text(json_format.MessageToJson(attributed_log()))
    assert main(["live", *server, str(live_log), "--batch-size", "2", "--discard"]) == 1
    out = capsys.readouterr().out
    assert "event 3: [client] SLASH_LIMIT seat 0" in out and "event 5: [AI] OUT_OF_RANGE seat 0" in out
    # A log that does not say who decided shows no such thing.
    assert main(["show", *server, stored["bare"]]) == 0
    out = capsys.readouterr().out
    assert "who decided" not in out and "[client]" not in out and "!! SLASH_LIMIT seat 0" in out


def test_the_viewer_lists_by_source_and_shows_who_decided(viewer: BackgroundServer, stored: dict[str, str]) -> None:
    with httpx.Client(base_url=viewer.http_url, timeout=60) as http:
        def ids(**params: str) -> set[str]:
            response = http.get("/api/replays", params=params)
            assert response.status_code == 200, response.text
            return {r["id"] for r in response.json()["replays"]}

        assert ids(source="client") == {stored["attributed"]} == ids(source="AI")
        assert ids(source="default") == set()
        assert ids(source="ai", code="out_of_range") == {stored["attributed"]}
        assert ids(source="client", code="OUT_OF_RANGE") == set()
        assert ids(source="any") == ids() == {stored["attributed"], stored["bare"]}
        bad = http.get("/api/replays", params={"source": "robot"})
        assert bad.status_code == 400 and "say client, ai or default" in bad.json()["error"]

        doc = http.get(f"/api/replays/{stored['attributed']}").json()
        assert doc["verdict"]["by_source"] == {"client": 1, "ai": 2}
        assert doc["verdict"]["by_source_text"] == "3 violations: 1 on client replies, 2 on AI replies"
        by_index = {a["index"]: a for a in doc["annotations"] if not a["derived"]}
        assert by_index[3]["source"] == "client" and by_index[5]["source"] == "ai"
        assert by_index[2]["source"] == "default" and "source" not in by_index[4]  # (the damage: an outcome)
        bare = http.get(f"/api/replays/{stored['bare']}").json()
        assert bare["verdict"]["by_source"] == {} and bare["verdict"]["by_source_text"] == ""
        assert not any("source" in a for a in bare["annotations"])

