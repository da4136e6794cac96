"""Every rule citation points somewhere real, and the cited anchors stay published.

Verdicts cite where a rule is written as ``docs/FILE.md#anchor`` (several separated by "; "):
the catalogue's ``rule`` fields (copied into every violation), the scenarios' ``"rule"`` fields,
and docstrings, comments and documents citing docs/rules.md. These tests fail when a citation
names a missing file or anchor, when a published anchor disappears, or when the product cites the
team's internal rules file (which it must not depend on) instead of docs/rules.md.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from verifier.codes import CATALOGUE

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SCENARIOS = Path(__file__).parent / "scenarios"
SCENARIO_FILES = sorted(SCENARIOS.rglob("*.json"))

# docs/FILE.md#anchor: a repository document and one of its explicit anchors (short kebab-case).
CITATION = re.compile(r"(?P<path>docs/[a-z0-9_.-]+\.md)#(?P<anchor>[a-z0-9]+(?:-[a-z0-9]+)*)")
ANCHOR = re.compile(r"<a\s+id=\"([^\"]*)\"\s*>")
KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # fenced blocks and code spans: examples, not anchors
# The team's internal reference, spelt so that this file does not cite it itself.
INTERNAL = "RULES" + ".md"

# Files the product is made of: everything in the repository but caches, virtual environments and
# build output (directories starting with "." are skipped too).
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".json", ".proto", ".toml", ".txt", ".ini", ".cfg", ".mako", ".c", ".h",
                 ".tsv", ".yaml", ".yml", ".sh"}
SKIPPED_DIRS = {"__pycache__", "build", "dist", "node_modules"}

def ids(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Every anchor published so far, per document. An anchor is never renamed or removed once published
# (docs/rules.md#anchors); a new one is published by adding it here.
PUBLISHED: dict[str, frozenset[str]] = {
    "docs/rules.md": ids("""
        anchors terms not-implemented role-table two-spies house-role-table generals white-generals max-hp
        starting-hands turn-order drawing reshuffle draw-game phases judgment-phase draw-phase play-phase
        slash-limit judgment-area using-cards targets choosing-cards virtual-cards hand-limit finish-phase
        timing responses unsupported-events distance attack-range distance-limit hp damage hp-loss recovery
        dying rescue death killer kill-reward kill-penalty dead-or-self-killer death-order victory lord-dies
        lord-side-wins game-over cards basic-cards slash elemental-slash jink peach analeptic tricks duel
        dismantlement snatch ex-nihilo collateral nullification savage-assault archery-attack god-salvation
        amazing-grace fire-attack iron-chain chained-damage delayed-tricks indulgence lightning
        supply-shortage equipment equipment-slots weapons crossbow double-sword qinggang-sword ice-sword blade
        spear axe halberd kylin-bow guding-blade fan armor eight-diagram renwang-shield vine silver-lion
        ignore-armor horses judgment real-game-rulings multi-target-slash fan-skill-slash ganglie-no-source
        dead-source loss-triggers fan-offer simultaneous-triggers server-records duplicate-delayed two-engines skills
        skill-wording
        skill-precedence lord-skills skill-timing skill-limit
        prohibited-targets hegemony hegemony-setup hegemony-generals hegemony-max-hp hegemony-first-seat
        hegemony-hidden hegemony-reveal hegemony-kingdom hegemony-careerist hegemony-companions hegemony-death
        hegemony-penalty hegemony-reward hegemony-victory hegemony-deck heg-nullification await-exhausted
        known-both befriend-attacking wu-six-swords triblade hegemony-skills
        scoring scoring-table scoring-bonus scoring-spy scoring-final-duel scoring-draw scoring-two-spies tournament
        rebirth rebirth-dead rebirth-sacrifice rebirth-general rebirth-victory
        tournament-house-rules house-rule-combinations last-three-clock first-out-protection
        dark-souls dark-souls-possession dark-souls-acts dark-souls-luohan dark-souls-xuanwu dark-souls-youzhu
        dark-souls-scoring
    """),
    "docs/generals.md": ids("""
        selection skills-in-the-log skill-rulings two-delayed-tricks skills jianxiong hujia guicai fankui
        ganglie tuxi luoyi tiandu yiji luoshen qingguo rende jijiang wusheng paoxiao guanxing kongcheng longdan
        mashu tieji jizhi qicai zhiheng jiuyuan qixi keji kurou yingzi fanjian guose liuli qianxun lianying
        xiaoji jieyin qingnang jijiu wushuang lijian biyue jizhi-converted
    """),
    "docs/generals-hegemony.md": ids("""
        selection companions reused different heg-luoshen heg-rende heg-kongcheng new rulings
        wu qun pindian
    """),
    "docs/log-format.md": ids("""
        header setup events implicit-declines respond-target outcomes complete-outcomes canonical-outcomes
        maneuvering hegemony hegemony-example annotated-replay following example-game scores rebirth move-order
        decision-source taken-cards house-rules dark-souls last-three-clock first-out-protection
    """),
    "docs/cards.md": ids("card-ids standard-equipment maneuvering standard-deck maneuvering-deck hegemony-deck"),
}


@cache
def anchor_list(path: str) -> tuple[str, ...]:
    """The explicit anchors of a repository document, in order (code spans and blocks left out)."""
    text = CODE.sub("", (ROOT / path).read_text(encoding="utf-8"))
    return tuple(ANCHOR.findall(text))


def problems(citation: str) -> list[str]:
    """Why a ``rule`` citation does not resolve (nothing when every part of it does)."""
    out = []
    for part in citation.split("; "):
        m = CITATION.fullmatch(part)
        if m is None:
            out.append(f"{part!r} is not of the form docs/FILE.md#anchor")
        elif not (ROOT / m["path"]).is_file():
            out.append(f"{part!r}: there is no file {m['path']}")
        elif m["anchor"] not in anchor_list(m["path"]):
            out.append(f"{part!r}: {m['path']} has no anchor {m['anchor']!r}")
    return out


def product_files() -> list[Path]:
    files = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(p.startswith(".") or p in SKIPPED_DIRS or p.endswith(".egg-info") for p in rel.parts[:-1]):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name == "Makefile"):
            files.append(path)
    return files


def test_the_rules_reference_exists_and_is_linked_from_the_readme() -> None:
    assert (DOCS / "rules.md").is_file()
    assert "](docs/rules.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(PUBLISHED))
def test_anchors_are_unique_kebab_case_and_stay_published(path: str) -> None:
    ids = anchor_list(path)
    assert ids, f"{path} has no explicit anchors"
    assert [a for a in ids if not KEBAB.fullmatch(a)] == [], f"{path}: anchor ids must be short kebab-case"
    assert sorted({a for a in ids if ids.count(a) > 1}) == [], f"{path}: an anchor id is used twice"
    gone = sorted(PUBLISHED[path] - set(ids))
    assert gone == [], f"{path}: published anchors are never renamed or removed, but these are gone: {gone}"
    new = sorted(set(ids) - PUBLISHED[path])
    assert new == [], f"{path}: new anchors {new}: publish them by adding them to PUBLISHED in this test"


def test_every_catalogue_rule_resolves() -> None:
    bad = {code.name: problems(code.rule) for code in CATALOGUE.values() if problems(code.rule)}
    assert bad == {}


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[str(p.relative_to(SCENARIOS)) for p in SCENARIO_FILES])
def test_every_scenario_rule_resolves(path: Path) -> None:
    rule = json.loads(path.read_text(encoding="utf-8"))["rule"]
    assert problems(rule) == []


def test_every_cited_anchor_exists_in_code_and_docs() -> None:
    """Every ``docs/FILE.md#anchor`` written anywhere, and every Markdown link with a fragment from one
    document to another (or within one), names an anchor that exists."""
    bad = []
    for path in product_files():
        rel = path.relative_to(ROOT)
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITATION.finditer(text):
            bad += [f"{rel}: {p}" for p in problems(m[0])]
        if path.suffix == ".md":
            for m in re.finditer(r"\]\(([^)\s#]*)#([^)\s]+)\)", CODE.sub("", text)):
                target = (path.parent / m[1]).resolve() if m[1] else path
                if target.suffix != ".md" or not target.is_relative_to(ROOT):
                    continue
                if not target.is_file():
                    bad.append(f"{rel}: link to a missing file {m[1]}")
                elif m[2] not in anchor_list(str(target.relative_to(ROOT))):
                    bad.append(f"{rel}: link to {m[1] or rel.name}#{m[2]}, which is no explicit anchor")
    assert bad == []


def test_no_citation_of_the_internal_rules_file() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}" for path in product_files()
             for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if INTERNAL in line]
    assert found == [], f"cite a docs/rules.md section (docs/rules.md#anchors) instead of {INTERNAL}"
