"""The viewer's JSON API over real HTTP (sgs-verify serve --http, beside gRPC in one process), on SQLite and
PostgreSQL: the list and its filters and paging, a replay with its annotations, the timeline and the state at
an event from any seat's view, uploads (logs and FreeKill records), errors, the documents, and the guard."""

from __future__ import annotations

import lzma
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clients.cheats.selfplay import CONSISTENT_KINDS, play_cheating_game
from clients.client import VerifierClient
from clients.selfplay import play_game
from service.config import Limits
from service.server import BackgroundServer
from tests.service.conftest import BACKENDS, fresh_database, server_config, serving

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
OCTETS = {"Content-Type": "application/octet-stream"}
FREEKILL = ROOT / "tests" / "data" / "freekill" / "transcripts" / "fk_p5_r5.jsonl.xz"


@pytest.fixture(scope="module", params=BACKENDS)
def viewer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp(f"viewer-{request.param}")
    limits = Limits(max_message_bytes=1024 * 1024, max_record_bytes=4 * 1024 * 1024)
    with serving(request.param, folder, limits=limits, http_address="127.0.0.1:0") as srv:
        yield srv


@pytest.fixture(scope="module")
def http(viewer: BackgroundServer) -> Iterator[httpx.Client]:
    # (an upload says its content type: one a cross-origin form could send is refused, docs/security.md#viewer)
    with httpx.Client(base_url=viewer.http_url, timeout=120, headers=OCTETS) as client:
        yield client


@pytest.fixture(scope="module")
def stored(http: httpx.Client) -> dict[str, dict[str, Any]]:
    """Four replays uploaded over HTTP: two with violations (cup-a), two clean (cup-b)."""
    cheat = play_cheating_game(3, 8, CONSISTENT_KINDS[0])
    uploads = {
        "second_slash": ((EXAMPLES / "second_slash.json").read_bytes(), {"tournament": "cup-a", "round": "1"}),
        "cheat": (cheat.log.SerializeToString(), {"tournament": "cup-a", "round": "2"}),
        "short_game": ((EXAMPLES / "short_game.json").read_bytes(), {"tournament": "cup-b"}),
        "selfplay": (play_game(1, 5).SerializeToString(), {"tournament": "cup-b", "table": "7"}),
    }
    out = {}
    for name, (data, params) in uploads.items():
        response = http.post("/api/replays", content=data, params=params)
        assert response.status_code == 201, response.text
        doc = response.json()
        assert doc["created"] is True
        out[name] = doc["replay"]
    out["cheat"]["cheat_index"] = cheat.index
    return out


def ids(doc: dict[str, Any]) -> set[str]:
    return {r["id"] for r in doc["replays"]}


def test_the_list_filters(http: httpx.Client, stored: dict[str, dict[str, Any]]) -> None:
    everything = http.get("/api/replays").json()
    assert everything["total_count"] == 4 and ids(everything) == {r["id"] for r in stored.values()}
    assert ids(http.get("/api/replays", params={"tournament": "cup-a"}).json()) == {
        stored["second_slash"]["id"], stored["cheat"]["id"]}
    assert ids(http.get("/api/replays", params={"code": "out_of_range"}).json()) == {stored["second_slash"]["id"]}
    assert ids(http.get("/api/replays", params={"code": "SLASH_LIMIT"}).json()) == {
        stored["second_slash"]["id"], stored["cheat"]["id"]}
    assert ids(http.get("/api/replays", params={"violations": "true"}).json()) == {
        stored["second_slash"]["id"], stored["cheat"]["id"]}
    assert ids(http.get("/api/replays", params={"violations": "false"}).json()) == {
        stored["short_game"]["id"], stored["selfplay"]["id"]}
    assert ids(http.get("/api/replays", params={"player": "alice"}).json()) == {
        stored["second_slash"]["id"], stored["short_game"]["id"]}
    assert ids(http.get("/api/replays", params={"player": "alice", "violations": "true"}).json()) == {
        stored["second_slash"]["id"]}
    assert http.get("/api/replays", params={"since": "2999-01-01"}).json()["total_count"] == 0
    row = next(r for r in everything["replays"] if r["id"] == stored["second_slash"]["id"])
    assert row["tournament"] == "cup-a" and row["round"] == "1" and row["violation_codes"] == ["OUT_OF_RANGE",
                                                                                                 "SLASH_LIMIT"]
    assert [s["player"] for s in row["seats"]] == ["alice", "bob", "carol", "dave"]
    assert row["seats"][0]["role"] == "lord" and row["url"] == f"/replays/{row['id']}"
    assert row["result"]["finished"] is False and row["submitted_at"].endswith("+00:00")


def test_the_list_pages(http: httpx.Client, stored: dict[str, dict[str, Any]]) -> None:
    seen: list[str] = []
    token = ""
    for _ in range(4):
        page = http.get("/api/replays", params={"page_size": 3, "page_token": token}).json()
        assert page["total_count"] == 4
        seen += [r["id"] for r in page["replays"]]
        token = page["next_page_token"]
        if not token:
            break
    assert len(seen) == 4 and set(seen) == {r["id"] for r in stored.values()}


@pytest.mark.parametrize(("params", "message"), [
    ({"violations": "maybe"}, "violations='maybe': say true or false"),
    ({"since": "yesterday"}, "since='yesterday' is not an ISO date"),
    ({"page_size": "x"}, "page_size='x' is not a whole number"),
    ({"page_token": "nonsense"}, "page_token 'nonsense' is not one this service issued"),
])
def test_bad_list_queries_are_400(http: httpx.Client, params: dict[str, str], message: str) -> None:
    response = http.get("/api/replays", params=params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_a_replay_with_its_annotations(http: httpx.Client, stored: dict[str, dict[str, Any]]) -> None:
    replay_id = stored["second_slash"]["id"]
    doc = http.get(f"/api/replays/{replay_id[:10]}").json()
    assert doc["info"]["id"] == replay_id
    assert doc["verdict"]["violation_count"] == 3 and doc["verdict"]["followed"] is True
    assert doc["verdict"]["result"]["reason"].startswith("the log ends while the game waits")
    assert [e["text"] for e in doc["events"]][3] == "seat 0 uses 杀 ♠8 (#16) → seat 1"
    flagged = [(a["index"], [v["code"] for v in a["violations"]]) for a in doc["annotations"] if a["violations"]]
    assert flagged == [(3, ["SLASH_LIMIT"]), (5, ["OUT_OF_RANGE", "SLASH_LIMIT"])]
    violation = doc["annotations"][[a["index"] for a in doc["annotations"]].index(3)]["violations"][0]
    assert violation == {"code": "SLASH_LIMIT", "rule": "docs/rules.md#slash-limit", "seat": 0, "card": 16,
                         "message": "seat 0 already used a 杀 in this play phase; 杀 ♠8 (#16) is a second one "
                                    "without 诸葛连弩"}


def test_missing_and_malformed_ids(http: httpx.Client, stored: dict[str, dict[str, Any]]) -> None:
    missing = http.get("/api/replays/" + "0" * 64)
    assert missing.status_code == 404 and "no stored replay has the id" in missing.json()["error"]
    assert http.get("/api/replays/xyz").status_code == 400
    assert http.get("/api/replays/" + "0" * 64 + "/state").status_code == 404
    assert http.get("/api/nothing-here").status_code == 404


def test_the_timeline_and_the_state_at_an_event(http: httpx.Client, stored: dict[str, dict[str, Any]]) -> None:
    cheat = stored["cheat"]
    timeline = http.get(f"/api/replays/{cheat['id']}/timeline").json()
    assert timeline["events"] == cheat["event_count"] and timeline["positions"] == cheat["event_count"] + 1
    assert timeline["turns"][0]["turn"] == 1 and timeline["turns"][0]["round"] == 1
    assert len(timeline["turn"]) == timeline["positions"]
    at = cheat["cheat_index"]
    state = http.get(f"/api/replays/{cheat['id']}/state", params={"event": at}).json()
    assert state["position"] == at and state["view"] == "open" and len(state["seats"]) == 8
    assert [v["code"] for a in state["annotations"] for v in a["violations"]] == ["SLASH_LIMIT"]
    assert all(s["hand"] is not None for s in state["seats"])
    seat_view = http.get(f"/api/replays/{cheat['id'][:12]}/state", params={"event": at, "view": 3}).json()
    assert seat_view["view"] == 3
    assert [s["hand"] is None for s in seat_view["seats"]] == [i != 3 for i in range(8)]
    end = http.get(f"/api/replays/{cheat['id']}/state", params={"event": timeline["positions"] - 1}).json()
    assert end["end"] is True and end["result"]["finished"] is True
    # A finished identity game: the replay's verdict carries each seat's score and its basis (docs/rules.md#scoring).
    scores = http.get(f"/api/replays/{cheat['id']}").json()["verdict"]["scores"]
    assert [x["seat"] for x in scores] == list(range(8)) and all(x["basis"] for x in scores)


@pytest.mark.parametrize(("params", "message"), [
    ({"event": 99}, "position 99 is not in 0…7"),
    ({"event": -1}, "position -1 is not in 0…7"),
    ({"event": "x"}, "event='x' is not a whole number"),
    ({"event": 0, "view": 9}, "seat 9 is not at this 4-seat table"),
    ({"event": 0, "view": "everyone"}, "view='everyone' is not a whole number"),
])
def test_bad_positions_and_views_are_400(http: httpx.Client, stored: dict[str, dict[str, Any]],
                                         params: dict[str, Any], message: str) -> None:
    response = http.get(f"/api/replays/{stored['second_slash']['id']}/state", params=params)
    assert response.status_code == 400 and message in response.json()["error"]


def test_uploads(http: httpx.Client, viewer: BackgroundServer, stored: dict[str, dict[str, Any]]) -> None:
    again = http.post("/api/replays", content=(EXAMPLES / "second_slash.json").read_bytes())
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["replay"]["id"] == stored["second_slash"]["id"]
    # The same replay for gRPC clients too: one store.
    with VerifierClient(viewer.address) as client:
        assert client.get(stored["second_slash"]["id"]).info.violation_count == 3
    garbage = http.post("/api/replays", content=b"\x00\x01garbage")
    assert garbage.status_code == 400 and "the upload: not a binary GameLog" in garbage.json()["error"]
    assert http.post("/api/replays", content=b"").status_code == 400
    too_big = http.post("/api/replays", content=b"x" * (1024 * 1024 + 1))
    assert too_big.status_code == 413 and "--max-message-bytes" in too_big.json()["error"]
    label = http.post("/api/replays", content=b"{}", params={"tournament": "t" * 201})
    assert label.status_code == 400 and "metadata.tournament is 201 characters" in label.json()["error"]


def test_a_freekill_record_upload(http: httpx.Client) -> None:
    data = FREEKILL.read_bytes()  # compressed records are taken as they are
    response = http.post("/api/replays", content=data, params={"engine": "freekill", "name": "fk_p5_r5.jsonl.xz",
                                                                "tournament": "fk"})
    assert response.status_code == 201, response.text
    replay = response.json()["replay"]
    assert "SKILL_COST" in replay["violation_codes"]
    doc = http.get(f"/api/replays/{replay['id']}").json()
    assert doc["origin"].startswith("freekill")
    bad = http.post("/api/replays", content=lzma.compress(b"{garbage\n"), params={"engine": "freekill"})
    assert bad.status_code == 400 and "cannot import the freekill record" in bad.json()["error"]
    unknown = http.post("/api/replays", content=b"x", params={"engine": "nosuch"})
    assert unknown.status_code == 400 and "engine 'nosuch' has no importer" in unknown.json()["error"]


def test_pages_static_files_and_documents(http: httpx.Client, stored: dict[str, dict[str, Any]]) -> None:
    index = http.get("/")
    assert index.status_code == 200 and '<script type="module" src="/static/list.js">' in index.text
    page = http.get(f"/replays/{stored['cheat']['id']}")
    assert page.status_code == 200 and "/static/replay.js" in page.text
    for name in ("common.js", "list.js", "replay.js", "viewer.css"):
        assert http.get(f"/static/{name}").status_code == 200
    rules = http.get("/docs/rules.md")
    assert rules.status_code == 200 and '<a id="slash-limit"></a>' in rules.text and "<table>" in rules.text
    assert '<a id="setup"></a>' in http.get("/docs/log-format.md").text
    assert http.get("/docs/viewer.md").status_code == 200
    assert http.get("/docs/nope.md").status_code == 404
    assert http.get("/docs/..%2Fpyproject.toml").status_code == 404


def test_a_guard_decides_every_api_request(tmp_path: Path) -> None:
    async def bearer(request: Request) -> Response | None:
        if request.headers.get("authorization") != "Bearer let-me-in":
            return JSONResponse({"error": "a bearer token is needed", "status": 401}, status_code=401)
        return None

    url, _ = fresh_database("sqlite", tmp_path)
    with BackgroundServer(server_config(url, tmp_path, http_address="127.0.0.1:0"),
                          viewer_guard=bearer) as srv, httpx.Client(base_url=srv.http_url, headers=OCTETS) as client:
        assert client.get("/api/replays").status_code == 401
        assert client.post("/api/replays", content=b"x").status_code == 401
        assert client.get("/api/replays", headers={"Authorization": "Bearer let-me-in"}).status_code == 200
        assert client.get("/").status_code == 200  # the pages themselves are static; their data is guarded


def test_the_viewer_address_must_be_free(tmp_path: Path, viewer: BackgroundServer) -> None:
    from service.server import ServerStartError

    taken = viewer.http_url.rstrip("/").rsplit(":", 1)[1]
    url, _ = fresh_database("sqlite", tmp_path)
    with pytest.raises(ServerStartError, match=f"cannot listen on 127.0.0.1:{taken} \\(the viewer, --http\\)"):
        BackgroundServer(server_config(url, tmp_path, http_address=f"127.0.0.1:{taken}")).start()
