"""The short fuzz run of CI (docs/fuzzing.md): a bounded number of cases of every family of tests/fuzzing.py
through the offline path and through every RPC of a real server on each backend, plus Hypothesis strategies
for the same oracles. Every case must be answered cleanly: no crash, hang, UNKNOWN or INTERNAL, no other
unexpected status, nothing stored half-written. `tools/fuzz.py` runs the same families for as long as wanted.
"""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from tests import fuzzing
from tests.service.conftest import BACKENDS

# Cases per family in CI (the seeded engine); the long run's figures are in docs/fuzzing.md.
OFFLINE_CASES = {"check-junk": 400, "check-json": 200, "check-truncate": 300, "check-bitflip": 200,
                 "check-absurd": 25, "check-cli": 12}
RPC_CASES = {"rpc-raw": 60, "rpc-absurd": 25, "rpc-log": 40, "rpc-query": 80, "rpc-stream": 25}
SEED = 20261201


def no_findings(tally: fuzzing.Tally, found: list[str]) -> None:
    assert tally.findings == 0, "\n".join(found[:10])


# ============================================================================ offline

@pytest.mark.parametrize("family", list(OFFLINE_CASES))
def test_offline_family(family: str, tmp_path: Path) -> None:
    tally, found = fuzzing.Tally(), []
    for index in range(OFFLINE_CASES[family]):
        outcome, data = fuzzing.run_offline_case(family, fuzzing.case_rng(family, SEED, index))
        tally.add(outcome)
        if outcome.finding:
            path = fuzzing.write_finding(tmp_path, family, "offline", SEED, index, outcome, data)
            found.append(f"{path}: {outcome.label}: {outcome.detail[:500]}")
    no_findings(tally, found)
    assert tally.cases == OFFLINE_CASES[family]


def test_the_offline_oracle_catches_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle itself: an exception out of verify is a crash, a lone surrogate in a message unexpected."""
    import verifier

    def broken(log: pb.GameLog) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(fuzzing, "verify", broken)
    assert fuzzing.check_bytes(fuzzing.corpus().binary[0]).label == "crash"
    monkeypatch.setattr(fuzzing, "verify", verifier.verify)
    assert fuzzing.check_bytes(fuzzing.corpus().binary[0]).label == "clean"
    assert fuzzing.check_bytes(b"\xff").label == "unreadable"


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                         st.floats(allow_nan=False), st.text(max_size=30))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(fuzzing.GAMELOG_KEYS) | st.text(max_size=8), inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_any_bytes_are_a_clean_verdict_or_error(data: bytes) -> None:
    outcome = fuzzing.check_bytes(data)
    assert not outcome.finding, outcome.detail


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({"header": JSON_VALUES, "events": JSON_VALUES}) | JSON_VALUES)
def test_any_json_is_a_clean_verdict_or_error(doc: object) -> None:
    outcome = fuzzing.check_bytes(json.dumps(doc).encode())
    assert not outcome.finding, outcome.detail


def _seat() -> st.SearchStrategy[pb.Seat]:
    return st.builds(pb.Seat, player=st.text(max_size=20), general=st.text(max_size=10),
                     role=st.integers(min_value=-5, max_value=20))


HEADERS = st.builds(pb.GameHeader, ruleset=st.sampled_from(["identity/standard-1", "hegemony/1", "", "x/y"]),
                    seed=st.integers(min_value=0, max_value=2**64 - 1), mode=st.integers(min_value=-3, max_value=9),
                    seats=st.lists(_seat(), max_size=12))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header=HEADERS, events=st.lists(st.sampled_from(range(len(fuzzing.corpus().logs[1].events))), max_size=60),
       cut=st.integers(min_value=0, max_value=400))
def test_a_made_up_header_with_real_events(header: pb.GameHeader, events: list[int], cut: int) -> None:
    """Headers of every shape in front of events of a real game, picked and reordered."""
    source = fuzzing.corpus().logs[1]
    log = pb.GameLog(header=header)
    log.events.extend(source.events[i] for i in events)
    log.events.extend(source.events[:cut])
    outcome = fuzzing.check_bytes(log.SerializeToString())
    assert not outcome.finding, outcome.detail


# ============================================================================ the service

@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[fuzzing.ServerUnderTest]:
    folder = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    sut = fuzzing.ServerUnderTest(request.param, folder).start()
    try:
        yield sut
    finally:
        sut.stop()


@pytest.mark.parametrize("family", list(RPC_CASES))
def test_rpc_family(server: fuzzing.ServerUnderTest, family: str, tmp_path: Path) -> None:
    tally, found = fuzzing.Tally(), []
    generator = fuzzing.RPC_GENERATORS[family]
    for index in range(RPC_CASES[family]):
        case = generator(fuzzing.case_rng(family, SEED, index), server.known)
        outcome = server.run(case)
        tally.add(outcome)
        if outcome.finding:
            path = fuzzing.write_finding(tmp_path, family, server.backend, SEED, index, outcome, case.pack())
            found.append(f"{path}: {outcome.label}: {outcome.detail[:500]}")
            if not server.alive:
                server.restart()
    no_findings(tally, found)
    assert server.check_store(keep=5) == []
    server.sample_memory()
    assert server.alive


def test_the_rpc_oracle_flags_what_is_not_documented(server: fuzzing.ServerUnderTest) -> None:
    """The oracle itself: a status outside the documented ones (here UNIMPLEMENTED) is a finding, a clean
    refusal is not, and a recorded case replays the same."""
    outcome = server.run(fuzzing.RpcInput("/sgsverify.v1.VerifierService/NoSuchMethod", [b""]))
    assert outcome.label == "unexpected" and "UNIMPLEMENTED" in outcome.detail
    case = fuzzing.RpcInput(fuzzing.SERVICE + "GetReplay", [spb.GetReplayRequest(id="\0").SerializeToString()])
    assert server.run(fuzzing.RpcInput.unpack(case.pack())).label == "error:INVALID_ARGUMENT"


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=80) | st.sampled_from(fuzzing.STRINGS[:-1])
TIMESTAMPS = st.tuples(st.integers(min_value=-2**63, max_value=2**63 - 1),
                       st.integers(min_value=-2**31, max_value=2**31 - 1))


@st.composite
def list_requests(draw: st.DrawFn) -> spb.ListReplaysRequest:
    req = spb.ListReplaysRequest(tournament=draw(TEXT), player=draw(TEXT), violation_code=draw(TEXT),
                                 page_size=draw(st.integers(min_value=0, max_value=2**32 - 1)),
                                 page_token=draw(TEXT | st.binary(max_size=300).map(
                                     lambda b: base64.urlsafe_b64encode(b).decode())))
    if draw(st.booleans()):
        req.submitted_after.seconds, req.submitted_after.nanos = draw(TIMESTAMPS)
    if draw(st.booleans()):
        req.submitted_before.seconds, req.submitted_before.nanos = draw(TIMESTAMPS)
    return req


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(req=list_requests(), regress=st.booleans())
def test_list_and_regress_filters(server: fuzzing.ServerUnderTest, req: spb.ListReplaysRequest,
                                  regress: bool) -> None:
    if regress:
        req.tournament = req.tournament or "fuzz-nothing"  # a regression of the whole store is not the point
        case = fuzzing.RpcInput(fuzzing.SERVICE + "Regress", [spb.RegressRequest(filter=req).SerializeToString()])
    else:
        case = fuzzing.RpcInput(fuzzing.SERVICE + "ListReplays", [req.SerializeToString()])
    outcome = server.run(case)
    assert not outcome.finding, outcome.detail


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(ident=st.text(alphabet=string.hexdigits + "\0g%_ ", max_size=70) | TEXT, run=TEXT,
       method=st.sampled_from(["GetReplay", "DeleteReplay"]))
def test_ids_and_runs(server: fuzzing.ServerUnderTest, ident: str, run: str, method: str) -> None:
    req = spb.GetReplayRequest(id=ident, run=run) if method == "GetReplay" else spb.DeleteReplayRequest(id=ident)
    outcome = server.run(fuzzing.RpcInput(fuzzing.SERVICE + method, [req.SerializeToString()]))
    assert not outcome.finding, outcome.detail


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=3000), method=st.sampled_from(fuzzing.METHODS + fuzzing.OTHER_METHODS))
def test_any_request_bytes(server: fuzzing.ServerUnderTest, data: bytes, method: str) -> None:
    full = method if method.startswith("/") else fuzzing.SERVICE + method
    outcome = server.run(fuzzing.RpcInput(full, [data]))
    assert not outcome.finding, outcome.detail
    if method == "VerifyLog":
        outcome = server.run(fuzzing.RpcInput(full, [spb.VerifyLogRequest(encoded_log=data).SerializeToString()]))
        assert not outcome.finding, outcome.detail


def test_streams_cut_midway_leave_nothing_behind(server: fuzzing.ServerUnderTest) -> None:
    """An upload or live game cancelled after each number of its messages stores nothing and the server
    goes on answering. (The client half-closes a second after its last message: on a machine too busy to
    cancel before that, the stream is whole and its replay stored, as it should be.)"""
    log = fuzzing.corpus().logs[0]
    before = server.count()
    completed = 0
    for method, cls in (("UploadLog", spb.UploadLogRequest), ("VerifyLive", spb.VerifyLiveRequest)):
        for cut in (0, 1, 2, 5):
            first = cls(header=log.header)
            first.header.recorder = f"cut-{method}-{cut}"  # a log of its own each time
            messages = [first.SerializeToString()] + [cls(events=log.events[i:i + 50]).SerializeToString()
                                                      for i in range(0, len(log.events), 50)]
            assert len(messages) == 5
            outcome = server.run(fuzzing.RpcInput(fuzzing.SERVICE + method, messages, cancel_after=cut))
            assert outcome.label in ("error:CANCELLED", "ok"), outcome
            completed += outcome.label == "ok"
    assert server.count() == before + completed
    assert server.channel is not None
    with pytest.raises(grpc.RpcError) as caught:
        server.channel.unary_unary(fuzzing.SERVICE + "GetReplay")(b"\n\x01\x00", timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
