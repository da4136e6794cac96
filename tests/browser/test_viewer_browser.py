"""The viewer in a real browser: Debian's Chromium (/usr/bin/chromium) driven by Playwright, against
`sgs-verify serve --http` on loopback. The list's filters, opening a replay, N to the violation and its
code, a seat's view hiding the other hands, a shared link restoring the position, an upload landing on its
verdict. Screenshots of the main states go to out/viewer-screenshots/ (for a person to look at; never
compared). Without a browser these tests are skipped, except under CI=true, where they fail."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clients.cheats.selfplay import CONSISTENT_KINDS, play_cheating_game
from clients.selfplay import play_game
from service.server import BackgroundServer
from tests.service.conftest import fresh_database, server_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
CHROMIUM = Path(os.environ.get("SGS_VERIFY_CHROMIUM", "/usr/bin/chromium"))
SHOTS = Path(os.environ.get("SGS_VERIFY_SCREENSHOTS", ROOT / "out" / "viewer-screenshots"))
# This machine's launch flags (no sandbox as root, no GPU, nothing fetched from the network).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# How long a page may take to show what a test waits for: generous, because CI machines run other
# work beside the tests (a bound on waiting, not a timing assertion).
WAIT_MS = 30_000

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
    expect.set_options(timeout=WAIT_MS)
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]


def _no_browser(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run; .ci/run installs chromium)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if sync_playwright is None:
        _no_browser("playwright is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        _no_browser(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as pw:
        # Playwright gives each launch a fresh, temporary --user-data-dir of its own.
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("viewer-browser")
    url, _ = fresh_database("sqlite", folder)
    srv = BackgroundServer(server_config(url, folder, http_address="127.0.0.1:0")).start()
    try:
        base = srv.http_url.rstrip("/")
        cheat = play_cheating_game(3, 8, CONSISTENT_KINDS[0])
        ids = {}
        with httpx.Client(base_url=base, timeout=120, headers={"Content-Type": "application/octet-stream"}) as http:
            for name, data, params in (
                    ("second_slash", (EXAMPLES / "second_slash.json").read_bytes(), {"tournament": "spring-cup"}),
                    ("cheat", cheat.log.SerializeToString(), {"tournament": "spring-cup", "round": "2"}),
                    ("clean", play_game(2, 6, generals=True).SerializeToString(), {"tournament": "autumn-cup"})):
                response = http.post("/api/replays", content=data, params=params)
                assert response.status_code == 201, response.text
                ids[name] = response.json()["replay"]["id"]
        yield {"base": base, "ids": ids, "cheat_index": cheat.index}
    finally:
        srv.stop()


def watch_csp(page: Page) -> list[str]:
    """What the viewer's Content-Security-Policy blocked on this page (Chromium says each on the console)."""
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    return blocked


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda err: errors.append(str(err)))
    blocked = watch_csp(pg)
    try:
        yield pg
    finally:
        context.close()
    assert errors == [], f"the page raised: {errors}"
    assert blocked == [], f"the Content-Security-Policy blocked: {blocked}"


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def open_list(page: Page, base: str) -> None:
    page.goto(f"{base}/")
    expect(page.locator("body[data-ready=true]")).to_be_attached()


def open_replay(page: Page, base: str, replay_id: str, fragment: str = "") -> None:
    page.goto(f"{base}/replays/{replay_id}{fragment}")
    expect(page.locator("body[data-ready=true]")).to_be_attached()
    expect(page.locator("#seats .seat").first).to_be_visible()


def test_the_list_and_its_filters(page: Page, site: dict[str, Any]) -> None:
    open_list(page, site["base"])
    rows = page.locator("#replays tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator("#total")).to_have_text("(3)")
    shot(page, "01-list")
    page.fill("#f-code", "out_of_range")
    page.click("#f-apply")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", site["ids"]["second_slash"])
    assert "code=OUT_OF_RANGE" in page.url  # the filters are in the address
    page.click("#f-clear")
    expect(rows).to_have_count(3)
    page.check("#f-violations")
    page.press("#f-violations", "Enter")
    expect(rows).to_have_count(2)
    expect(page.locator("#replays tbody tr.has-violations")).to_have_count(2)
    page.uncheck("#f-violations")
    page.fill("#f-tournament", "autumn-cup")
    page.click("#f-apply")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", site["ids"]["clean"])
    page.fill("#f-tournament", "")
    page.fill("#f-player", "alice")
    page.click("#f-apply")
    expect(rows).to_have_count(1)
    shot(page, "02-list-filtered")
    page.fill("#f-player", "nobody")
    page.click("#f-apply")
    expect(rows).to_have_count(0)
    expect(page.locator("#empty")).to_contain_text("No stored replay matches")


def test_opening_a_replay_and_n_to_its_violation(page: Page, site: dict[str, Any]) -> None:
    page.goto(site["base"] + "/?code=SLASH_LIMIT&tournament=spring-cup&violations=true")
    expect(page.locator("#replays tbody tr")).to_have_count(2)
    page.locator(f"#replays tbody tr[data-id='{site['ids']['cheat']}'] a.open").click()
    expect(page).to_have_url(re.compile(f"/replays/{site['ids']['cheat']}"))
    expect(page.locator("body[data-ready=true]")).to_be_attached()
    expect(page.locator("#seats .seat")).to_have_count(8)
    expect(page.locator("#verdict-text")).to_have_text("1 violation")
    expect(page.locator("#event-title")).to_contain_text("Event 0 of")
    page.keyboard.press("n")
    at = site["cheat_index"]
    expect(page.locator("#event-title")).to_contain_text(f"Event {at} of")
    expect(page.locator("#annotation .violation .code")).to_have_text("SLASH_LIMIT")
    expect(page.locator("#annotation a.rule")).to_have_attribute("href", "/docs/rules.md#slash-limit")
    expect(page.locator(f"#timeline li.ev.current[data-pos='{at}']")).to_have_class(re.compile("bad"))
    expect(page).to_have_url(re.compile(f"#e={at}&view=open$"))
    expect(page.locator(f"body[data-shown='{at}|open']")).to_be_attached()
    shot(page, "03-replay-violation")
    page.keyboard.press("n")  # there is no later one: the position stays
    expect(page.locator("#position")).to_have_text("no later violation")
    expect(page).to_have_url(re.compile(f"#e={at}&"))
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(f"#e={at + 1}&"))
    page.keyboard.press("Shift+ArrowRight")
    turn_start = int(re.search(r"#e=(\d+)", page.url)[1])  # type: ignore[index]
    assert turn_start > at + 1
    expect(page.locator("#timeline li.ev.current")).to_have_attribute("data-pos", str(turn_start))
    page.keyboard.press("Shift+ArrowLeft")  # back to the start of the cheat's turn
    expect(page.locator("#timeline li.ev.current")).not_to_have_attribute("data-pos", str(turn_start))
    assert int(re.search(r"#e=(\d+)", page.url)[1]) <= at  # type: ignore[index]
    page.keyboard.press("n")
    expect(page).to_have_url(re.compile(f"#e={at}&"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("p")
    expect(page).to_have_url(re.compile(f"#e={at}&"))
    # The rule link lands on its section of the rules reference.
    page.locator("#annotation a.rule").click()
    expect(page).to_have_url(re.compile("/docs/rules.md#slash-limit$"))
    expect(page.locator("#slash-limit")).to_be_attached()
    assert page.evaluate("document.querySelector('#slash-limit').getBoundingClientRect().top") < 200
    shot(page, "04-rule-section")


def test_a_seats_view_hides_the_other_hands(page: Page, site: dict[str, Any]) -> None:
    open_replay(page, site["base"], site["ids"]["second_slash"], "#e=2")
    hands = page.locator("#seats .seat .hand")
    expect(page.locator("#seats .seat .hand[data-hidden=false]")).to_have_count(4)
    page.keyboard.press("1")  # seat 1's point of view: the key is the seat's number
    expect(page).to_have_url(re.compile("#e=2&view=1$"))
    expect(page.locator("body[data-shown='2|1']")).to_be_attached()
    expect(page.locator("#seats .seat[data-seat='1'] .hand")).to_have_attribute("data-hidden", "false")
    expect(page.locator("#seats .seat[data-seat='1'] .hand .card").first).to_be_visible()
    for seat in (0, 2, 3):
        hand = page.locator(f"#seats .seat[data-seat='{seat}'] .hand")
        expect(hand).to_have_attribute("data-hidden", "true")
        expect(hand.locator(".card")).to_have_count(0)
        expect(hand.locator(".count")).to_have_text(re.compile(r"^\d+ cards?$"))
    expect(page.locator("#seats .seat[data-seat='0'] .role")).to_have_text("lord")
    expect(page.locator("#seats .seat[data-seat='2'] .role")).to_have_text("?")
    expect(page.locator("#view")).to_have_value("1")
    shot(page, "05-seat-view")
    page.keyboard.press("o")
    expect(page.locator("body[data-shown='2|open']")).to_be_attached()
    expect(hands.locator(".card").first).to_be_visible()
    expect(page.locator("#seats .seat .hand[data-hidden=false]")).to_have_count(4)


def test_a_shared_link_restores_the_position_and_view(page: Page, site: dict[str, Any], browser: Browser) -> None:
    open_replay(page, site["base"], site["ids"]["clean"], "#e=40&view=3")
    expect(page.locator("body[data-shown='40|3']")).to_be_attached()
    expect(page.locator("#slider")).to_have_value("40")
    expect(page.locator("#view")).to_have_value("3")
    expect(page.locator("#event-title")).to_contain_text("Event 40 of")
    expect(page.locator("#timeline li.ev.current")).to_have_attribute("data-pos", "40")
    # The verdict shows each seat's score (docs/rules.md#scoring), how it is made up on hover.
    expect(page.locator("#scores .score")).to_have_count(6)
    expect(page.locator("#scores .score").nth(1)).to_contain_text("seat 1")
    expect(page.locator("#scores .score").nth(1).locator("b")).to_have_text("3")
    expect(page.locator("#scores .score").nth(1)).to_have_attribute("title",
                                                                   "the rebels won: rebel: 3 × 1 living rebel = 3")
    link = page.url
    # A second browser context (nothing shared but the link) opens exactly there.
    other = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        phone = other.new_page()
        phone.goto(link)
        expect(phone.locator("body[data-shown='40|3']")).to_be_attached()
        expect(phone.locator("#slider")).to_have_value("40")
        expect(phone.locator("#seats .seat[data-seat='3'] .hand")).to_have_attribute("data-hidden", "false")
        expect(phone.locator("#seats .seat[data-seat='0'] .hand")).to_have_attribute("data-hidden", "true")
        SHOTS.mkdir(parents=True, exist_ok=True)
        phone.screenshot(path=str(SHOTS / "06-phone.png"))
    finally:
        other.close()
    # Moving with the slider updates the address.
    page.locator("#slider").fill("12")
    expect(page).to_have_url(re.compile("#e=12&view=3$"))
    page.keyboard.press("End")
    expect(page.locator("#event-title")).to_contain_text("End of the log")
    expect(page.locator("#center .result")).to_contain_text("win")
    shot(page, "07-end-of-game")


def test_an_upload_lands_on_its_verdict(page: Page, site: dict[str, Any], tmp_path: Path) -> None:
    cheat = play_cheating_game(5, 6, next(k for k in CONSISTENT_KINDS if k.name == "slash_out_of_range"))
    assert cheat.index is not None
    path = tmp_path / "uploaded-game.pb"
    path.write_bytes(cheat.log.SerializeToString())
    open_list(page, site["base"])
    page.set_input_files("#u-file", str(path))
    page.fill("#u-tournament", "uploaded")
    page.click("#u-send")
    # (the page puts its position in the fragment once the replay is loaded, which can come before this looks)
    expect(page).to_have_url(re.compile(r"/replays/[0-9a-f]{64}(#.*)?$"))
    expect(page.locator("#verdict-text")).to_have_text("1 violation")
    expect(page.locator("#verdict .code").first).to_have_text("OUT_OF_RANGE")
    expect(page.locator("#title")).to_contain_text("uploaded")
    shot(page, "08-uploaded")
    page.keyboard.press("n")
    expect(page.locator("#event-title")).to_contain_text(f"Event {cheat.index} of")
    # A file that is no log is refused, and the page says why.
    bad = tmp_path / "notes.json"
    bad.write_text("{\"not\": \"a log\"}")
    open_list(page, site["base"])
    page.set_input_files("#u-file", str(bad))
    page.click("#u-send")
    expect(page.locator("#status")).to_contain_text("notes.json: the upload")
    expect(page.locator("#status")).to_have_class(re.compile("error"))


def test_a_server_with_tokens_asks_for_one_and_keeps_it_in_the_tab(browser: Browser, tmp_path: Path) -> None:
    """The page asks once (a dialog), keeps the token in this tab's sessionStorage and sends it as a bearer
    header: a wrong one is asked again, a right one shows that tenant's replays only; a new tab asks anew."""
    from tests.service.conftest import make_token

    url, _ = fresh_database("sqlite", tmp_path)
    acme = make_token(url, "acme", "submit,read")
    bravo = make_token(url, "bravo", "submit,read")
    with BackgroundServer(server_config(url, tmp_path, http_address="127.0.0.1:0")) as srv:
        base = srv.http_url.rstrip("/")
        with httpx.Client(base_url=base, timeout=120, headers={"Content-Type": "application/octet-stream"}) as http:
            for token, game in ((acme, play_game(1, 5)), (bravo, play_game(2, 5))):
                response = http.post("/api/replays", content=game.SerializeToString(),
                                     headers={"Authorization": f"Bearer {token}"})
                assert response.status_code == 201, response.text
        context = browser.new_context(viewport={"width": 1360, "height": 900})
        try:
            page = context.new_page()
            blocked = watch_csp(page)
            sent: list[str] = []
            page.on("request", lambda r: sent.append(r.headers.get("authorization", "")) if "/api/" in r.url else None)
            page.goto(f"{base}/")
            dialog = page.locator("dialog.token-dialog")
            expect(dialog).to_be_visible()
            expect(dialog.locator(".reason")).to_contain_text("needs a token")
            shot(page, "token-dialog")
            dialog.locator("input[name=token]").fill("sgsv_000000000000_" + "A" * 43)
            dialog.locator("button[value=ok]").click()
            expect(page.locator("dialog.token-dialog .reason")).to_contain_text("not valid")
            page.locator("dialog.token-dialog input[name=token]").fill(acme)
            page.locator("dialog.token-dialog button[value=ok]").click()
            expect(page.locator("#replays tbody tr")).to_have_count(1)
            expect(page.locator("#total")).to_have_text("(1)")
            assert page.evaluate("sessionStorage.getItem('sgs-verify-token')") == acme
            assert f"Bearer {acme}" in sent
            page.reload()  # the same tab: no question asked
            expect(page.locator("#replays tbody tr")).to_have_count(1)
            expect(page.locator("dialog.token-dialog")).to_have_count(0)
            other = context.new_page()  # another tab starts with nothing
            other.goto(f"{base}/")
            expect(other.locator("dialog.token-dialog")).to_be_visible()
            assert acme not in page.url and "token" not in page.url
            assert not context.cookies()
            assert blocked == [], f"the Content-Security-Policy blocked: {blocked}"
        finally:
            context.close()


def test_cards_on_a_general_and_a_reborn_seat(browser: Browser, tmp_path: Path) -> None:
    """不屈's 创 on 周泰's general are listed in every seat's view (they are face up) while they are there; a
    seat reborn twice is tagged so, with the generals it was reborn as on hover."""
    from tests.test_state import scenario

    url, _ = fresh_database("sqlite", tmp_path)
    with BackgroundServer(server_config(url, tmp_path, http_address="127.0.0.1:0")) as srv:
        base = srv.http_url.rstrip("/")
        ids = {}
        with httpx.Client(base_url=base, timeout=120, headers={"Content-Type": "application/octet-stream"}) as http:
            for name in ("hegemony/wu/buqu_recover.json", "rebirth/reborn_again.json"):
                response = http.post("/api/replays", content=scenario(name).SerializeToString())
                assert response.status_code == 201, response.text
                ids[name.split("/")[-1]] = response.json()["replay"]["id"]
        context = browser.new_context(viewport={"width": 1360, "height": 900})
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            open_replay(page, base, ids["buqu_recover.json"], "#e=8&view=2")
            expect(page.locator("body[data-shown='8|2']")).to_be_attached()
            zhoutai = page.locator("#seats .seat[data-seat='1']")
            expect(zhoutai.locator(".on-general")).to_have_attribute("data-count", "1")
            expect(zhoutai.locator(".on-general")).to_have_attribute("data-hidden", "false")
            expect(zhoutai.locator(".on-general .card")).to_have_text(re.compile(r"^赤兔\s*♥5$"))
            expect(zhoutai.locator(".hand")).to_have_attribute("data-hidden", "true")  # his hand stays hidden
            expect(page.locator("#seats .on-general")).to_have_count(1)
            shot(page, "09-cards-on-general")
            page.keyboard.press("ArrowRight")  # event 9: the 桃 brings him to 1 HP, the 创 is discarded
            expect(page.locator("body[data-shown='9|2']")).to_be_attached()
            expect(page.locator("#seats .on-general")).to_have_count(0)
            open_replay(page, base, ids["reborn_again.json"], "#e=8")
            expect(page.locator("body[data-shown='8|open']")).to_be_attached()
            expect(page.locator("#seats .reborn-tag")).to_have_count(0)
            page.keyboard.press("ArrowRight")  # the sacrifice that makes the rebirth due
            tag = page.locator("#seats .seat[data-seat='1'] .reborn-tag")
            expect(tag).to_have_text("reborn")
            expect(tag).to_have_attribute("title", "reborn as 貂蝉")
            page.keyboard.press("End")
            expect(tag).to_have_text("reborn ×2")
            expect(tag).to_have_attribute("title", "reborn as 貂蝉, then 华佗")
            expect(page.locator("#seats .reborn-tag")).to_have_count(1)
            shot(page, "10-reborn")
            assert errors == [], f"the page raised: {errors}"
        finally:
            context.close()


def test_who_made_each_decision(page: Page, site: dict[str, Any]) -> None:
    """A log that says who made each decision (the hand-made one of tests/test_decision_source.py: a rule broken
    on seat 0's own client, two on an AI's decision): the list finds it by "Decided by", and the replay shows
    the count by source and, beside each violation, who decided."""
    from google.protobuf import json_format

    from tests.test_decision_source import attributed_log

    with httpx.Client(base_url=site["base"], timeout=120) as http:
        response = http.post("/api/replays", content=json_format.MessageToJson(attributed_log()).encode(),
                             params={"tournament": "attributed"}, headers={"Content-Type": "application/json"})
        assert response.status_code == 201, response.text
        replay_id = response.json()["replay"]["id"]
    open_list(page, site["base"])
    rows = page.locator("#replays tbody tr")
    page.select_option("#f-source", "client")
    page.click("#f-apply")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", replay_id)
    assert "source=client" in page.url
    page.select_option("#f-source", "default")  # (no decision made by default broke a rule)
    page.click("#f-apply")
    expect(rows).to_have_count(0)
    open_replay(page, site["base"], replay_id)
    expect(page.locator("#by-source")).to_have_text("who decided: 3 violations: 1 on client replies, 2 on AI replies")
    page.keyboard.press("n")
    expect(page.locator("#event-title")).to_contain_text("Event 3 of")
    expect(page.locator("#annotation .violation .source")).to_have_text("client")
    expect(page.locator("#annotation .violation .source")).to_have_attribute("data-source", "client")
    expect(page.locator("#timeline li.ev[data-pos='3'] .source")).to_have_text("client")
    shot(page, "10-decided-by-client")
    page.keyboard.press("n")
    expect(page.locator("#event-title")).to_contain_text("Event 5 of")
    expect(page.locator("#annotation .violation .source")).to_have_text(["AI", "AI"])
    expect(page.locator("#timeline li.ev[data-pos='5'] .source")).to_have_text("AI")


def test_the_pager_says_which_rows_and_key_0_is_seat_0(page: Page, site: dict[str, Any]) -> None:
    """Issue 29: the pager said "showing 25 of 70" on page 1 and page 2 alike; key 1 chose seat 0."""
    open_list(page, site["base"])
    expect(page.locator("#p-where")).to_have_text(re.compile(r"^showing 1–(\d+) of \1$"))  # one page of them all
    texts = page.evaluate("import('/static/list.js').then((m) => [m.pagerText(25, 70, 0, false), "
                          "m.pagerText(25, 70, 1, true), m.pagerText(20, 70, 2, true), m.pagerText(25, 70, 0, true)])")
    assert texts == ["showing 1–25 of 70", "showing 26–50 of 70", "showing 51–70 of 70", "25 more of 70"]
    open_replay(page, site["base"], site["ids"]["second_slash"], "#e=2")
    page.keyboard.press("0")
    expect(page).to_have_url(re.compile("#e=2&view=0$"))
    page.keyboard.press("3")
    expect(page).to_have_url(re.compile("#e=2&view=3$"))


def test_an_upload_already_stored_says_so_and_keeps_the_form(page: Page, site: dict[str, Any]) -> None:
    """The example is stored under spring-cup: uploading it again under another tournament records nothing, and
    the page says so instead of opening the replay as if it had been stored as typed."""
    open_list(page, site["base"])
    page.set_input_files("#u-file", str(EXAMPLES / "second_slash.json"))
    page.fill("#u-tournament", "other-cup")
    page.click("#u-send")
    status = page.locator("#status")
    expect(status).to_contain_text("second_slash.json is already stored")
    expect(status).to_contain_text("under the tournament “spring-cup”")
    expect(status).to_contain_text("“other-cup”, was not recorded")
    expect(status.locator("a")).to_have_attribute("href", f"/replays/{site['ids']['second_slash']}")
    assert page.url.rstrip("/") == site["base"]  # still the list
    expect(page.locator("#u-tournament")).to_have_value("other-cup")


def test_a_freekill_transcript_is_told_by_its_content(page: Page, site: dict[str, Any], tmp_path: Path) -> None:
    renamed = tmp_path / "room-1234.json"  # named like one of our logs
    renamed.write_bytes((ROOT / "tests" / "data" / "freekill" / "fk_rand_p4_35.jsonl").read_bytes())
    open_list(page, site["base"])
    page.set_input_files("#u-file", str(renamed))
    page.click("#u-send")
    expect(page).to_have_url(re.compile(r"/replays/[0-9a-f]{64}(#.*)?$"))
    expect(page.locator("body[data-ready=true]")).to_be_attached()


def test_the_content_security_policy_is_on_and_watched(browser: Browser, site: dict[str, Any]) -> None:
    """The policy the other tests find nothing blocked by is really applied (an inline script is refused, and
    the watch sees it), and no page of the viewer can be framed."""
    context = browser.new_context()
    try:
        page = context.new_page()
        blocked = watch_csp(page)
        response = page.goto(f"{site['base']}/docs/security.md")
        assert response is not None and "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        page.evaluate("const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                      "document.body.appendChild(s)")
        expect(page.locator("body")).to_be_attached()
        page.wait_for_function("() => true")
        assert page.evaluate("window.injected") is None
        assert any("inline script" in b.lower() or "script-src" in b for b in blocked), blocked
    finally:
        context.close()
