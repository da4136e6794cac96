"""Tokens, scopes and tenants, tried as a hostile client would (docs/security.md), on SQLite and PostgreSQL:
no token, a malformed, a wrong or a revoked token, a token without the scope, another tenant's token;
idempotency per tenant without telling; the viewer's API behind the same tokens; the audit log; the CLI's
token commands and --token; a server that runs open until a first token exists."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.cli import main
from clients.client import (
    ListFilter,
    Metadata,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    VerifierClient,
)
from clients.selfplay import play_game
from service import guard
from service.server import BackgroundServer
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from storage.access import audit_log, list_tokens
from storage.store import Store
from tests.service.conftest import BACKENDS, fresh_database, make_token, server_config


@dataclass
class Secured:
    server: BackgroundServer
    url: str
    tokens: dict[str, str]

    @property
    def address(self) -> str:
        return self.server.address

    def client(self, who: str | None) -> VerifierClient:
        return VerifierClient(self.address, timeout=60, token=self.tokens[who] if who else "")


TOKENS = {"acme": ("acme", "submit,read,delete"), "acme-reader": ("acme", "read"),
          "acme-submitter": ("acme", "submit"), "bravo": ("bravo", "submit,read,delete"),
          "admin": ("ops", "admin")}


@pytest.fixture(scope="module", params=BACKENDS)
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    folder = tmp_path_factory.mktemp(f"secured-{request.param}")
    url, pg = fresh_database(request.param, folder)
    tokens = {name: make_token(url, tenant, scopes, name) for name, (tenant, scopes) in TOKENS.items()}
    server = BackgroundServer(server_config(url, folder, http_address="127.0.0.1:0")).start()
    try:
        yield Secured(server, url, tokens)
    finally:
        server.stop()
        if pg is not None:
            pg.drop()


def code_of(call: Any) -> tuple[grpc.StatusCode, str]:
    try:
        call()
    except grpc.RpcError as err:
        return err.code(), err.details() or ""
    raise AssertionError("the call succeeded")


def game(seed: int) -> Any:
    return play_game(seed, 5)


# ---------------------------------------------------------------------------------------- who may call

def test_no_token_and_bad_tokens_are_unauthenticated(secured: Secured) -> None:
    log = game(1)
    good = secured.tokens["acme"]
    wrong_secret = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    with grpc.insecure_channel(secured.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        calls = {
            "VerifyLog": lambda md: stub.VerifyLog(spb.VerifyLogRequest(log=log), metadata=md, timeout=30),
            "UploadLog": lambda md: stub.UploadLog(iter([spb.UploadLogRequest(header=log.header)]), metadata=md,
                                                   timeout=30),
            "VerifyLive": lambda md: list(stub.VerifyLive(iter([spb.VerifyLiveRequest(header=log.header)]),
                                                          metadata=md, timeout=30)),
            "GetReplay": lambda md: stub.GetReplay(spb.GetReplayRequest(id="ab" * 32), metadata=md, timeout=30),
            "ListReplays": lambda md: stub.ListReplays(spb.ListReplaysRequest(), metadata=md, timeout=30),
            "DeleteReplay": lambda md: stub.DeleteReplay(spb.DeleteReplayRequest(id="ab" * 32), metadata=md,
                                                         timeout=30),
            "Regress": lambda md: list(stub.Regress(spb.RegressRequest(), metadata=md, timeout=30)),
            "ListRuns": lambda md: stub.ListRuns(spb.ListRunsRequest(), metadata=md, timeout=30),
        }
        for name, call in calls.items():
            for metadata, expected in (((), "needs a token"),
                                       ((("authorization", "Basic dXNlcjpwYXNz"),), "not `Bearer TOKEN`"),
                                       ((("authorization", "Bearer not-a-token"),), "not valid"),
                                       ((("authorization", f"Bearer {wrong_secret}"),), "not valid"),
                                       ((("authorization", "Bearer sgsv_000000000000_" + "A" * 43),), "not valid")):
                code, details = code_of(lambda c=call, m=metadata: c(m))
                assert code == grpc.StatusCode.UNAUTHENTICATED, (name, metadata, code, details)
                assert expected in details, (name, details)
                assert good not in details
        # A refused request is not read: a large one is answered as fast as a small one.
        started = time.monotonic()
        code, _ = code_of(lambda: stub.VerifyLog(spb.VerifyLogRequest(encoded_log=b"\0" * (15 << 20)), timeout=30))
        assert code == grpc.StatusCode.UNAUTHENTICATED and time.monotonic() - started < 10
        # Health checking and reflection stay open.
        health = health_pb2_grpc.HealthStub(channel)
        assert health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status == \
            health_pb2.HealthCheckResponse.SERVING
    with secured.client(None) as anonymous, pytest.raises(Unauthenticated, match="needs a token"):
        anonymous.list_page()


def test_a_token_needs_the_scope_of_the_call(secured: Secured) -> None:
    log = game(2)
    with secured.client("acme-reader") as reader, secured.client("acme-submitter") as submitter, \
            secured.client("acme") as member:
        with pytest.raises(PermissionDenied, match="'submit' scope"):
            reader.verify(log)
        with pytest.raises(PermissionDenied, match="'submit' scope"):
            list(reader.live(log.header, log.events))
        sub = submitter.verify(log)
        with pytest.raises(PermissionDenied, match="'read' scope"):
            submitter.get(sub.id)
        with pytest.raises(PermissionDenied, match="'delete' scope"):
            submitter.delete(sub.id)
        with pytest.raises(PermissionDenied, match="'delete' scope"):
            reader.delete(sub.id)
        assert reader.get(sub.id).info.id == sub.id
        with pytest.raises(PermissionDenied, match="'admin' scope"):
            list(member.regress())
        # Runs are the admin's, as Regress is: no other scope lists them.
        for client in (reader, submitter, member):
            with pytest.raises(PermissionDenied, match="ListRuns needs a token with the 'admin' scope"):
                client.list_runs()


def test_a_revoked_token_stops_working(secured: Secured, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "TOKEN_CACHE_SECONDS", 0.2)
    token = make_token(secured.url, "acme", "read", "short-lived")
    with VerifierClient(secured.address, token=token, timeout=30) as c:
        c.list_page()
        token_id = token.split("_")[1]
        assert main(["token", "revoke", token_id, "--db", secured.url]) == 0
        time.sleep(0.5)
        with pytest.raises(Unauthenticated, match="revoked"):
            c.list_page()


# ---------------------------------------------------------------------------------------- tenants

def test_tenants_see_only_their_own(secured: Secured) -> None:
    log = game(3)
    with secured.client("acme") as acme, secured.client("bravo") as bravo, secured.client("admin") as admin:
        mine = acme.verify(log, Metadata(tournament="acme-cup", submitter="acme-bot"))
        again = acme.verify(log, Metadata(tournament="other"))
        assert not again.created and again.id == mine.id  # idempotent within the tenant
        assert again.info.metadata.tournament == "acme-cup"
        # Bravo submits the same log: a replay of its own, and nothing says acme has it.
        theirs = bravo.verify(log, Metadata(tournament="bravo-cup", submitter="mallory"))
        assert theirs.created and theirs.id != mine.id
        assert theirs.info.log_sha256 == mine.info.log_sha256 == mine.replay.log_sha256
        assert theirs.info.tenant == "bravo" and mine.info.tenant == "acme"
        assert theirs.info.metadata.tournament == "bravo-cup"
        uploaded = bravo.upload(log)  # the same log uploaded: bravo's replay again, found by hash
        assert not uploaded.created and uploaded.id == theirs.id
        # Bravo cannot see, find by prefix, delete or relabel acme's replay.
        for key in (mine.id, mine.id[:10]):
            with pytest.raises(NotFound):
                bravo.get(key)
        with pytest.raises(NotFound):
            bravo.delete(mine.id)
        assert mine.id not in {i.id for i in bravo.list()}
        assert {i.tenant for i in bravo.list()} == {"bravo"}
        with pytest.raises(PermissionDenied, match="admin"):
            bravo.list_page(ListFilter(tenant="acme"))
        assert acme.get(mine.id).info.metadata.submitter == "acme-bot"  # untouched
        # The admin sees every tenant, or one.
        everything = {i.id for i in admin.list()}
        assert {mine.id, theirs.id} <= everything
        assert {i.tenant for i in admin.list(ListFilter(tenant="acme"))} == {"acme"}
        assert admin.get(theirs.id).info.tenant == "bravo"
        # Acme deletes its own; bravo's copy stays.
        acme.delete(mine.id)
        with pytest.raises(NotFound):
            acme.get(mine.id)
        assert bravo.get(theirs.id).info.id == theirs.id
        # ... and a live game is stored in the submitter's tenant too.
        updates = list(bravo.live(log.header, log.events))
        finished = updates[-1].finished
        assert finished is not None and finished.stored and not finished.created and finished.info.id == theirs.id


def test_the_regress_rpc_is_for_admins_over_every_tenant(secured: Secured) -> None:
    with secured.client("acme") as acme, secured.client("bravo") as bravo, secured.client("admin") as admin:
        acme.verify(game(4))
        bravo.verify(game(5))
        total = admin.list_page(page_size=1).total_count
        bravo_count = admin.list_page(ListFilter(tenant="bravo"), page_size=1).total_count
        summary = next(m.summary for m in admin.regress() if m.WhichOneof("kind") == "summary")
        assert summary.replays == total and summary.changed == 0
        summary = next(m.summary for m in admin.regress(ListFilter(tenant="bravo"))
                       if m.WhichOneof("kind") == "summary")
        assert summary.replays == bravo_count < total
        # A run is not a tenant's: it is listed (to admins only) with its replays of every tenant.
        summary = next(m.summary for m in admin.regress(run="ops-all") if m.WhichOneof("kind") == "summary")
        assert {r.name: r.replays for r in admin.list_runs()}["ops-all"] == total


def test_the_cli_lists_runs_with_an_admin_token_only(secured: Secured, capsys: pytest.CaptureFixture[str]) -> None:
    command = ["regress", "--server", secured.address, "--list-runs", "--token"]
    assert main([*command, secured.tokens["acme"]]) != 0
    assert "ListRuns needs a token with the 'admin' scope" in capsys.readouterr().err
    with secured.client("acme") as acme:
        acme.verify(game(6))  # (a run of no replay is not listed: the test stores its own, whatever ran before it)
    with secured.client("admin") as admin:
        list(admin.regress(ListFilter(tenant="acme"), run="cli-run"))
        expected = [f"{r.name}: {r.replays} replay(s)," for r in admin.list_runs()]
    assert "cli-run" in " ".join(expected)
    assert main([*command, secured.tokens["admin"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(expected) and all(line.startswith(e) for line, e in zip(lines, expected, strict=True))


def test_deletes_and_token_changes_are_audited(secured: Secured) -> None:
    with secured.client("bravo") as bravo:
        sub = bravo.verify(game(6))
        bravo.delete(sub.id)
    store = Store.open(secured.url)
    try:
        entries = audit_log(store, 200)
        deletes = [e for e in entries if e.action == "replay.delete" and e.target == sub.id]
        assert len(deletes) == 1
        entry = deletes[0]
        assert entry.tenant == "bravo" and entry.actor.startswith("token ") and entry.request_id
        bravo_id = secured.tokens["bravo"].split("_")[1]
        assert bravo_id in entry.actor
        created = {e.target for e in entries if e.action == "token.create"}
        assert {t.split("_")[1] for t in secured.tokens.values()} <= created
        assert not any(t in (e.detail + e.actor + e.target) for e in entries for t in secured.tokens.values())
    finally:
        store.close()


# ---------------------------------------------------------------------------------------- the viewer

def test_the_viewer_takes_the_same_tokens(secured: Secured) -> None:
    with secured.client("acme") as acme:
        mine = acme.verify(game(7), Metadata(tournament="viewer-cup"))
    with httpx.Client(base_url=secured.server.http_url, timeout=60) as http:
        def as_(who: str | None) -> dict[str, str]:
            return {"Authorization": f"Bearer {secured.tokens[who]}"} if who else {}

        missing = http.get("/api/replays")
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert http.get("/api/replays", headers={"Authorization": "Bearer nope"}).status_code == 401
        listed = http.get("/api/replays", headers=as_("acme")).json()
        assert mine.id in {r["id"] for r in listed["replays"]} and {r["tenant"] for r in listed["replays"]} == {"acme"}
        theirs = http.get("/api/replays", headers=as_("bravo")).json()
        assert mine.id not in {r["id"] for r in theirs["replays"]}
        for path in (f"/api/replays/{mine.id}", f"/api/replays/{mine.id[:10]}", f"/api/replays/{mine.id}/timeline",
                     f"/api/replays/{mine.id}/state?event=3"):
            assert http.get(path, headers=as_("acme")).status_code == 200, path
            assert http.get(path, headers=as_("bravo")).status_code == 404, path
            assert http.get(path).status_code == 401
        upload = (Path(__file__).resolve().parents[2] / "docs" / "examples" / "second_slash.json").read_bytes()
        refused = http.post("/api/replays", content=upload, headers=as_("acme-reader"))
        assert refused.status_code == 403 and "'submit' scope" in refused.json()["error"]
        stored = http.post("/api/replays", content=upload, headers=as_("acme-submitter"))
        assert stored.status_code in (200, 201) and stored.json()["replay"]["tenant"] == "acme"
        assert http.get("/").status_code == 200  # the page itself holds no data; it asks for a token


# ---------------------------------------------------------------------------------------- the CLI

def test_the_cli_token_commands_and_token_option(secured: Secured, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert main(["token", "create", "--tenant", "charlie", "--scopes", "submit,read", "--name", "ci",
                 "--db", secured.url]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert token.startswith("sgsv_") and "not shown again" in err
    assert main(["token", "create", "--tenant", "Bad Name", "--db", secured.url]) == 2
    assert "not a tenant name" in capsys.readouterr().err
    assert main(["token", "create", "--scopes", "root", "--db", secured.url]) == 2
    assert "unknown scope 'root'" in capsys.readouterr().err
    assert main(["token", "list", "--db", secured.url]) == 0
    listing = capsys.readouterr().out
    assert "charlie" in listing and token not in listing and token.split("_")[1] in listing
    path = tmp_path / "game.pb"
    path.write_bytes(game(8).SerializeToString())
    assert main(["list", "--server", secured.address]) == 2
    assert "UNAUTHENTICATED" in capsys.readouterr().err
    assert main(["submit", str(path), "--server", secured.address, "--token", token]) == 0
    monkeypatch.setenv("SGS_VERIFY_TOKEN", token)
    assert main(["list", "--server", secured.address]) == 0
    assert "1 of 1 matching" in capsys.readouterr().out
    assert main(["delete", "0123456789abcdef", "--server", secured.address]) == 2
    monkeypatch.delenv("SGS_VERIFY_TOKEN")
    capsys.readouterr()
    assert main(["list", "--server", secured.address, "--token", secured.tokens["admin"], "--tenant", "charlie",
                 "--json"]) == 0
    assert [json.loads(line)["tenant"] for line in capsys.readouterr().out.splitlines()] == ["charlie"]
    assert main(["list", "--server", secured.address, "--token", token, "--tenant", "acme"]) == 2
    assert "PERMISSION_DENIED" in capsys.readouterr().err
    assert main(["token", "revoke", token.split("_")[1], "--db", secured.url]) == 0
    assert main(["token", "revoke", "ffffffffffff", "--db", secured.url]) == 2
    capsys.readouterr()
    assert main(["audit", "--db", secured.url, "--limit", "5"]) == 0
    assert "token.revoke" in capsys.readouterr().out
    store = Store.open(secured.url)
    try:
        assert token.split("_")[1] not in {t.id for t in list_tokens(store)}
        assert token.split("_")[1] in {t.id for t in list_tokens(store, include_revoked=True)}
    finally:
        store.close()


# ---------------------------------------------------------------------------------------- open until a token

def test_a_local_server_without_tokens_is_open_until_one_is_made(tmp_path: Path) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    config = server_config(url, tmp_path, health_interval_seconds=0.2)
    from service.server import describe_start

    with BackgroundServer(config) as server:
        said = describe_start(server.server)
        assert "authentication: OFF" in said and "anyone on this machine" in said
        with VerifierClient(server.address, token="", timeout=30) as c:
            sub = c.verify(game(9))
            assert sub.info.tenant == "default" and sub.id == sub.replay.log_sha256
            token = make_token(url, "default", "read")
            deadline = time.monotonic() + 10
            while True:  # the next store check sees the token and turns authentication on
                try:
                    c.list_page()
                except Unauthenticated:
                    break
                assert time.monotonic() < deadline, "authentication did not turn on"
                time.sleep(0.1)
        with VerifierClient(server.address, token=token, timeout=30) as c:
            assert c.get(sub.id).info.id == sub.id  # the default tenant's replays are the token's
