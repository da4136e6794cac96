"""Every link of every page the viewer serves leads somewhere (issue 29: its docs pages linked to the
source tree, the example logs, the .proto files and the fuzz runs, all 404).

A real `sgs-verify serve --http --examples` is crawled from `/`: each HTML page's links and sources, the
links written into the static scripts, and the replay pages the list links to (the list is drawn by its
script, so their ids are read from the API the script reads). Every same-site target must answer 200, and
every `#anchor` into a document must name an element of it."""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import pytest

from tests.service.test_service_cli import ServeProcess

# Links a script builds from data (`/replays/${id}`) are followed as the pages that data gives; a script's
# literal links (to documents) are followed as written.
SCRIPT_LINK = re.compile(r"""["'`](/(?:docs|static|replays|proto)/[^"'`$?{}\s]*)""")


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name in ("id", "name"):
                self.ids.add(value)


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGS_VERIFY_")}
    server = ServeProcess(["--data-dir", str(tmp_path / "data"), "--http", "127.0.0.1:0", "--examples"], env)
    try:
        server.wait_for_line("viewer on")
        url = next(m.group(1) for line in server.lines if (m := re.search(r"viewer on (\S+)", line)))
        server.wait_for_line("example games")
        yield url
    finally:
        server.kill()


def test_every_link_of_every_served_page_leads_somewhere(viewer: str) -> None:
    site = urlsplit(viewer).netloc
    with httpx.Client(base_url=viewer, timeout=60) as http:
        replays = http.get("/api/replays", params={"page_size": 100}).json()["replays"]
        assert replays, "the examples were not stored"
        start = ["/", *(f"/replays/{r['id']}" for r in replays)]
        # Every violation's rule cites a document anchor, which the replay page links to.
        for r in replays:
            for ann in http.get(f"/api/replays/{r['id']}").json()["annotations"]:
                for v in ann.get("violations", []):
                    start += [urljoin("/", part.strip()) for part in v["rule"].split(";")]
        queue = deque((viewer, link) for link in start)
        seen: set[str] = set()
        anchors: dict[str, set[str]] = {}
        wanted: list[tuple[str, str, str]] = []  # (page, link, anchor)
        broken: list[str] = []
        while queue:
            page, link = queue.popleft()
            target, fragment = urldefrag(urljoin(page, link))
            parts = urlsplit(target)
            if parts.scheme not in ("http", "https") or parts.netloc != site:
                continue  # data: icons, other sites
            if fragment and parts.path.startswith("/docs/"):
                wanted.append((page, link, fragment))
            if target in seen:
                continue
            seen.add(target)
            answer = http.get(target)
            if answer.status_code != 200:
                broken.append(f"{link} on {page}: {answer.status_code}")
                continue
            kind = answer.headers.get("content-type", "")
            if "text/html" in kind:
                parser = Links()
                parser.feed(answer.text)
                anchors[target] = parser.ids
                queue.extend((target, found) for found in parser.links)
            elif "javascript" in kind:
                queue.extend((target, found) for found in SCRIPT_LINK.findall(answer.text))
        for page, link, fragment in wanted:
            target = urldefrag(urljoin(page, link))[0]
            if target in anchors and fragment not in anchors[target]:
                broken.append(f"{link} on {page}: no #{fragment} there")
    assert not broken, "\n".join(sorted(set(broken)))
    assert any("/docs/examples/" in url for url in seen) and any("/proto/" in url for url in seen)
    assert len([url for url in seen if "/docs/" in url]) > 10
