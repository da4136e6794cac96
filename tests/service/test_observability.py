"""Health that follows the store (SQLite: its folder moved away and back; PostgreSQL: through a proxy cut and
restored, tests/service/test_service_errors.py), the Prometheus metrics, and unexpected errors: logged with a
request id, answered without SQL or parameters."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
import httpx
import pytest
from sqlalchemy import text

from clients.client import ServiceError, ServiceUnavailable, Unauthenticated, VerifierClient
from clients.selfplay import play_game
from service.guard import RequestIdFilter
from service.server import BackgroundServer
from storage.database import create_database_engine
from tests.service.conftest import BACKENDS, fresh_database, make_token, server_config
from tests.service.test_service_errors import wait_for_health

ROOT = Path(__file__).resolve().parents[2]
SECOND_SLASH = (ROOT / "docs" / "examples" / "second_slash.json").read_bytes()


def test_sqlite_health_follows_the_database_file(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    url, _ = fresh_database("sqlite", folder)
    moved = tmp_path / "elsewhere"
    with BackgroundServer(server_config(url, tmp_path, health_interval_seconds=0.2)) as server, \
            VerifierClient(server.address, timeout=30) as c:
        stored = c.verify(play_game(1, 5))
        assert c.health() == "SERVING"
        folder.rename(moved)  # the database file is gone
        try:
            wait_for_health(c, "NOT_SERVING")
            with pytest.raises(ServiceUnavailable, match="cannot be reached") as raised:
                c.list_page()
            assert "elsewhere" not in raised.value.details and "sqlite" not in raised.value.details
            with pytest.raises(ServiceUnavailable):
                c.verify(play_game(2, 5))
            assert not folder.exists()  # and no empty database was made in its place
        finally:
            moved.rename(folder)
        wait_for_health(c, "SERVING")
        assert c.get(stored.id).info.id == stored.id
        assert c.verify(play_game(2, 5)).created
        assert c.list_page().total_count == 2


def test_the_metrics(tmp_path: Path) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    token = make_token(url, "acme", "submit,read")
    with BackgroundServer(server_config(url, tmp_path, metrics_address="127.0.0.1:0")) as server:
        with VerifierClient(server.address, token=token, timeout=30) as c:
            c.verify(SECOND_SLASH)
            log = play_game(3, 5)
            list(c.live(log.header, log.events, discard=True))
            c.list_page()
        with VerifierClient(server.address, token="", timeout=30) as anonymous, pytest.raises(Unauthenticated):
            anonymous.list_page()
        url_ = server.server.metrics_url
        assert url_ is not None and url_.startswith("http://127.0.0.1:")
        body = httpx.get(url_, timeout=10).text
    expected = [
        'sgs_verify_requests_total{code="OK",method="VerifyLog"} 1.0',
        'sgs_verify_requests_total{code="OK",method="VerifyLive"} 1.0',
        'sgs_verify_requests_total{code="UNAUTHENTICATED",method="ListReplays"} 1.0',
        'sgs_verify_request_seconds_count{code="OK",method="ListReplays"} 1.0',
        'sgs_verify_verifications_total{source="whole",verdict="violations"} 1.0',
        'sgs_verify_verifications_total{source="live",verdict="clean"} 1.0',
        'sgs_verify_violations_total{code="SLASH_LIMIT"} 2.0',
        'sgs_verify_violations_total{code="OUT_OF_RANGE"} 1.0',
        'sgs_verify_refused_total{reason="unauthenticated"} 1.0',
        'sgs_verify_streams_open{method="VerifyLive"} 0.0',
        "sgs_verify_worker_queue_depth 0.0",
        "sgs_verify_store_up 1.0",
        "sgs_verify_buffered_request_bytes 0.0",
    ]
    for line in expected:
        assert line in body, line
    events = next(float(x.split()[1]) for x in body.splitlines() if x.startswith("sgs_verify_events_verified_total"))
    assert events == 7 + len(log.events)
    assert "acme" not in body and token not in body  # no tenant, no token in any label


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unexpected_error_is_logged_with_a_request_id_and_never_shows_sql(
        backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url, pg = fresh_database(backend, tmp_path)
    try:
        with BackgroundServer(server_config(url, tmp_path)) as server, \
                VerifierClient(server.address, timeout=30) as c:
            engine = create_database_engine(url)
            with engine.begin() as conn:  # the store's own table is gone: a fault the code does not expect
                conn.execute(text("ALTER TABLE violations RENAME TO violations_moved"))
            engine.dispose()
            caplog.handler.addFilter(RequestIdFilter())
            with caplog.at_level(logging.WARNING, logger="sgs-verify"), pytest.raises(ServiceError) as raised:
                c.verify(SECOND_SLASH)
            err = raised.value
            assert err.code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE), err
            for leak in ("INSERT", "SELECT", "violations_moved", "violation", "replay_blob", "[SQL", "parameters",
                         "SLASH_LIMIT", "sqlite://", "postgresql", str(tmp_path)):
                assert leak not in err.details, (leak, err.details)
            assert err.request_id and len(err.request_id) >= 8
            if err.code == grpc.StatusCode.INTERNAL:
                assert f"request id {err.request_id}" in err.details
            logged = [r for r in caplog.records if getattr(r, "request_id", "") == err.request_id]
            assert logged, "the failure was not logged under its request id"
            assert c.list_page().total_count == 0  # nothing half-written
    finally:
        if pg is not None:
            pg.drop()
