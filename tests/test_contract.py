"""The contract and the documents stay true: generated code matches proto/, the code
catalogue page matches the catalogue, and the documented examples verify as described."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from google.protobuf import json_format

from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify
from verifier.codes import CATALOGUE, catalogue_markdown
from verifier.replay import completed

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def load(path: Path) -> pb.GameLog:
    return json_format.Parse(path.read_text(encoding="utf-8"), pb.GameLog())


def test_generated_code_matches_proto() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_proto.py"), "--check"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr


def test_generated_code_is_not_a_package_named_proto() -> None:
    assert not (ROOT / "proto" / "__init__.py").exists()


def test_codes_page_matches_catalogue() -> None:
    assert (DOCS / "codes.md").read_text(encoding="utf-8") == catalogue_markdown()


def test_every_code_has_a_known_rule_and_meaning() -> None:
    for code in CATALOGUE.values():
        assert code.name.isupper() and code.rule and code.meaning


def test_short_game_example() -> None:
    decisions = load(DOCS / "examples" / "short_game_decisions.json")
    full = load(DOCS / "examples" / "short_game.json")
    replay = verify(decisions)
    assert replay.violation_count == 0 and replay.result.side == pb.SIDE_REBELS
    assert completed(decisions, replay) == full
    replay_full = verify(full)
    assert replay_full.violation_count == 0
    assert not any(a.derived for a in replay_full.annotations)
    assert replay_full.final_digest == replay.final_digest
    page = (DOCS / "log-format.md").read_text(encoding="utf-8")
    assert (DOCS / "examples" / "short_game.json").read_text(encoding="utf-8").strip() in page
    assert (DOCS / "examples" / "short_game_decisions.json").read_text(encoding="utf-8").strip() in page


def test_readme_violation_example() -> None:
    replay = verify(load(DOCS / "examples" / "second_slash.json"))
    got = [(a.index, v.code) for a in replay.annotations for v in a.violations]
    assert got == [(3, "SLASH_LIMIT"), (5, "OUT_OF_RANGE"), (5, "SLASH_LIMIT")]


def test_hegemony_example_game() -> None:
    decisions = load(DOCS / "examples" / "hegemony_game_decisions.json")
    full = load(DOCS / "examples" / "hegemony_game.json")
    replay = verify(decisions)
    assert replay.violation_count == 0 and replay.result.side == pb.SIDE_KINGDOM
    assert list(replay.result.winners) == [0, 1]
    assert completed(decisions, replay) == full
    replay_full = verify(full)
    assert replay_full.violation_count == 0 and not any(a.derived for a in replay_full.annotations)
    assert replay_full.final_digest == replay.final_digest
    page = (DOCS / "log-format.md").read_text(encoding="utf-8")
    for name in ("hegemony_game.json", "hegemony_game_decisions.json"):
        assert (DOCS / "examples" / name).read_text(encoding="utf-8").strip() in page
