"""The seeded generator against its published test vectors (docs/rng.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from verifier.cards import load_package
from verifier.rng import Stream, shuffled

ROOT = Path(__file__).resolve().parent.parent
VECTORS = json.loads((Path(__file__).parent / "data" / "rng_vectors.json").read_text())


def test_first_outputs() -> None:
    for case in VECTORS["outputs"]:
        s = Stream(int(case["seed"]), case["label"])
        assert [str(s.next_u64()) for _ in range(5)] == case["first"], case


def test_below() -> None:
    b = VECTORS["below"]
    s = Stream(int(b["seed"]), b["label"])
    assert [str(s.below(int(n))) for n in b["n"]] == b["results"]


def test_full_decks() -> None:
    ids = [c.id for c in load_package("standard")]
    assert ids == list(range(1, 109))
    for seed, deck in VECTORS["decks"].items():
        assert shuffled(int(seed), "deck", ids) == deck
        assert sorted(deck) == ids


def test_streams_are_independent() -> None:
    a = [Stream(5, "deck").next_u64() for _ in range(3)]
    b = [Stream(5, "roles").next_u64() for _ in range(3)]
    assert a != b


def test_doc_shows_the_vectors() -> None:
    doc = (ROOT / "docs" / "rng.md").read_text(encoding="utf-8")
    for case in VECTORS["outputs"]:
        assert ", ".join(case["first"]) in doc
    for deck in VECTORS["decks"].values():
        assert " ".join(f"{x:>3}" for x in deck[:18]) in doc


def test_rejects_bad_seed() -> None:
    with pytest.raises(ValueError):
        Stream(-1, "deck")
    with pytest.raises(ValueError):
        Stream(1 << 64, "deck")


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_independent_c_implementation(tmp_path: Path) -> None:
    exe = tmp_path / "rngref"
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler is not None
    subprocess.run([compiler, "-O1", "-o", str(exe), str(ROOT / "tools" / "rng_reference.c")], check=True)
    for case in VECTORS["outputs"]:
        out = subprocess.run([str(exe), case["seed"], case["label"], "5"], check=True, capture_output=True,
                             text=True).stdout.split()
        assert out == case["first"], case
    for seed, deck in VECTORS["decks"].items():
        out = subprocess.run([str(exe), seed, "deck", "shuffle", "108"], check=True, capture_output=True,
                             text=True).stdout.split()
        assert [int(x) for x in out] == deck
