"""The Regress RPC (and `regress --server`, `show --run`) over a running server, on both backends."""

from __future__ import annotations

import pytest

from clients.cli import main
from clients.client import ListFilter, ServiceError, VerifierClient
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb


def test_regress_rpc_streams_progress_and_a_summary(service: BackgroundServer, games: list[pb.GameLog],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with VerifierClient(service.address) as client:
        ids = [client.verify(log).info.id for log in games[:4]]
        total = client.list_page(ListFilter(), page_size=1).total_count
        messages = list(client.regress(run="rpc-run"))
        kinds = [m.WhichOneof("kind") for m in messages]
        assert kinds[0] == "progress" and kinds[-1] == "summary" and "change" not in kinds
        summary = messages[-1].summary
        assert (summary.replays, summary.verified, summary.changed, summary.failed) == (total, total, 0, 0)
        as_of = client.get(ids[0], run="rpc-run")
        assert as_of.replay.engine_version == summary.engine_version
        again = list(client.regress(run="rpc-run"))[-1].summary
        assert (again.resumed, again.verified) == (total, 0)
        with pytest.raises(ServiceError) as err:
            list(client.regress(against="no-such-run"))
        assert "no-such-run" in str(err.value)
        with pytest.raises(ServiceError):
            client.get(ids[0], run="no-such-run")
    assert main(["regress", "--server", service.address, "--json"]) == 0
    assert '"changed": []' in capsys.readouterr().out
    assert main(["show", ids[0], "--server", service.address, "--run", "rpc-run"]) == 0
