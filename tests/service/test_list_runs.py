"""The ListRuns RPC (and `regress --server ADDR --list-runs`) over a running server, on both backends: an empty
store lists nothing; runs made by `regress` on the store and by the Regress RPC are listed as the store has them,
and the CLI prints the same table with --server as with --db. (Its scope: tests/service/test_security.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from clients.cli import main
from clients.client import VerifierClient
from clients.commands.regress import run_from
from service.regress import LocalBackend, RegressOptions, regress
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import ReplayFilter, Store
from tests.service.conftest import BACKENDS, fresh_database, server_config

VARIANT = "tests.regress_variant:REBEL_REWARD_TWO"


@dataclass
class Served:
    server: BackgroundServer
    url: str


@pytest.fixture(params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    """A server over a fresh, empty database of its own (the module-wide one of conftest has other tests' runs)."""
    url, db = fresh_database(request.param, tmp_path)
    server = BackgroundServer(server_config(url, tmp_path)).start()
    try:
        yield Served(server, url)
    finally:
        server.stop()
        if db is not None:
            db.drop()


def test_runs_made_on_the_store_and_by_rpc_are_listed(served: Served, games: list[pb.GameLog],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    address = served.server.address
    with VerifierClient(address, timeout=60) as client:
        assert client.list_runs() == []
        assert main(["regress", "--server", address, "--list-runs"]) == 0
        assert capsys.readouterr().out == ""
        assert main(["regress", "--server", address, "--list-runs", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == []
        for log in games[:3]:
            client.verify(log)
        store = Store.open(served.url)
        try:
            # `regress` on the store (as `sgs-verify regress --db` runs it): two runs, one under another engine
            # and over one tournament's replays only.
            regress(store, RegressOptions(run="on-store"), LocalBackend(0))
            first = client.verify(games[3], spb.SubmissionMetadata(tournament="cup"))
            regress(store, RegressOptions(run="cup-variant", engine=VARIANT,
                                          filters=ReplayFilter(tournament="cup")), LocalBackend(0))
            # ... and one by the Regress RPC.
            summary = list(client.regress(run="by-rpc"))[-1].summary
            listed = client.list_runs()
            stored = store.runs()
        finally:
            store.close()
    assert first.created and summary.verified == 4
    assert [r.name for r in listed] == ["by-rpc", "cup-variant", "on-store"]
    assert tuple(run_from(r) for r in listed) == stored
    by_name = {r.name: r for r in listed}
    assert (by_name["on-store"].replays, by_name["cup-variant"].replays, by_name["by-rpc"].replays) == (3, 1, 4)
    assert list(by_name["by-rpc"].engine_versions) == [summary.engine_version]
    assert "+variant." in by_name["cup-variant"].engine_versions[0]
    assert all(r.started.ToDatetime() <= r.finished.ToDatetime() for r in listed)
    # The CLI prints the same table either way.
    assert main(["regress", "--server", address, "--list-runs"]) == 0
    remote = capsys.readouterr().out
    assert main(["regress", "--db", served.url, "--list-runs"]) == 0
    assert remote == capsys.readouterr().out
    assert remote.splitlines()[0].startswith("by-rpc: 4 replay(s), ")
    assert len(remote.splitlines()) == 3
    # --json: one document, the same either way, with the stored facts.
    assert main(["regress", "--server", address, "--list-runs", "--json"]) == 0
    remote_json = capsys.readouterr().out
    assert main(["regress", "--db", served.url, "--list-runs", "--json"]) == 0
    assert remote_json == capsys.readouterr().out
    doc = json.loads(remote_json)
    assert [(r["name"], r["replays"]) for r in doc] == [("by-rpc", 4), ("cup-variant", 1), ("on-store", 3)]
    assert [datetime.fromisoformat(r["started"]) for r in doc] == [r.started for r in stored]
    assert doc[1]["engine_versions"] == list(by_name["cup-variant"].engine_versions)
