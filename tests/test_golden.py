"""The golden corpus (tests/golden/): every reviewed log re-verifies to exactly its committed
playthrough, and the corpus covers every card, general and rule the scenarios exercise.

On a difference the failure shows a readable diff; if the change is intended, regenerate with
``python tools/golden.py --update`` (it shows the same diff before writing).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golden_tool", ROOT / "tools" / "golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


golden = _load_tool()
LOGS: list[Path] = golden.golden_logs()


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_golden_playthrough(path: Path) -> None:
    report = golden.check_one(path)
    if report is not None:
        pytest.fail(report, pytrace=False)


def test_corpus_is_complete() -> None:
    assert len(LOGS) >= 10
    logs = {p.stem for p in LOGS}
    expected = {p.stem for p in golden.EXPECTED.glob("*.txt")}
    assert logs == expected, f"logs without expected output: {sorted(logs - expected)}; expected output " \
                             f"without a log: {sorted(expected - logs)} (python tools/golden.py --update)"
    assert {sp.name for sp in golden.SELFPLAY} <= logs


def test_corpus_covers_every_card_general_and_scenario_code() -> None:
    from verifier.cards import all_cards
    from verifier.generals import standard_generals

    cov = golden.coverage_of(LOGS)
    missing = sorted(f"card:{c.name}" for c in all_cards().values() if f"card:{c.name}" not in cov)
    missing += sorted(f"general:{g}" for g in standard_generals() if f"general:{g}" not in cov)
    codes: set[str] = set()
    for path in sorted(golden.SCENARIOS.rglob("*.json")):
        expect = json.loads(path.read_text(encoding="utf-8"))["expect"]
        codes.update(v["code"] for key in ("violations", "derived_violations") for v in expect.get(key, []))
        codes.update(expect.get("header_violations", []))
    missing += sorted(f"code:{c}" for c in codes if f"code:{c}" not in cov)
    assert not missing, f"the golden corpus does not exercise {missing} (python tools/golden.py --update adds " \
                        "scenarios that do)"


def test_a_changed_playthrough_is_reported_with_a_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = LOGS[0]
    text = (golden.EXPECTED / f"{path.stem}.txt").read_text(encoding="utf-8").splitlines()
    row = next(i for i, line in enumerate(text) if "  OK  " in line)
    text[row] = text[row].replace("  OK  ", "  ILLEGAL  ")
    (tmp_path / f"{path.stem}.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
    monkeypatch.setattr(golden, "EXPECTED", tmp_path)
    report = golden.check_one(path)
    assert report is not None
    assert f"differs from line {row + 1}" in report
    assert any(line.startswith("-") and "ILLEGAL" in line for line in report.splitlines())
