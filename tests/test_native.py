"""The compiled engine core (setup.py, verifier/_native.py): used where it was built and still matches its
source; never run once its source has changed (the source runs instead, with a warning)."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import verifier
import verifier.replay
from verifier._native import (
    MANIFEST,
    changed_sources,
    is_compiled,
    recorded_sources,
    source_manifest,
    source_path,
)

PACKAGE = Path(verifier.__file__).resolve().parent


def test_the_core_runs_compiled_where_it_was_built() -> None:
    recorded = recorded_sources()
    if not recorded:
        if os.environ.get("CI") == "true":
            pytest.fail("CI installs the compiled core (setup.py), but no module was compiled")
        pytest.skip("an interpreted build (SGS_VERIFY_PURE, or no compiled core)")
    assert changed_sources(recorded) == [], "edited since the build: `make native`"
    assert "verifier.replay" in recorded and "verifier.engine.game" in recorded
    for name in recorded:
        assert is_compiled(importlib.import_module(name)), name


def test_a_changed_source_is_found_by_its_hash(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    sources = {"verifier.rules": b"A = 1\n", "verifier.engine.core": b"B = 2\n"}
    for name, text in sources.items():
        source_path(name, tmp_path).write_bytes(text)
    manifest = tmp_path / "native_sources.txt"
    manifest.write_text(source_manifest(sources, tmp_path))
    recorded = recorded_sources(manifest)
    assert recorded == {name: hashlib.sha256(text).hexdigest() for name, text in sources.items()}
    assert recorded.keys() == sources.keys()
    assert changed_sources(recorded, tmp_path) == []
    source_path("verifier.engine.core", tmp_path).write_bytes(b"B = 3\n")
    assert changed_sources(recorded, tmp_path) == ["verifier.engine.core"]
    source_path("verifier.rules", tmp_path).unlink()  # (a source gone counts as changed)
    assert changed_sources(recorded, tmp_path) == ["verifier.rules", "verifier.engine.core"]
    assert recorded_sources(tmp_path / "missing.txt") == {}


def copy_of_the_package(tmp_path: Path) -> Path:
    """The verifier package as installed (its compiled modules too, if any), and the compiled modules'
    shared library beside it, in a folder of their own."""
    shutil.copytree(PACKAGE, tmp_path / "verifier", ignore=shutil.ignore_patterns("__pycache__"))
    for shared in PACKAGE.parent.glob("verifier_native__mypyc.*"):
        shutil.copy(shared, tmp_path / shared.name)
    manifest = tmp_path / "verifier" / MANIFEST.name
    if not manifest.exists():
        # (an interpreted build: a manifest of the sources as they are, so the check has one to read)
        manifest.write_text(source_manifest(("verifier.replay", "verifier.engine.game", "verifier.rng")))
    return tmp_path


PROBE = ("import json, verifier.replay, verifier.engine.game, verifier.rng\n"
         "from clients.selfplay import play_game\n"
         "from verifier import verify\n"
         "print(json.dumps([verifier.replay.__file__, verifier.engine.game.__file__, verifier.rng.__file__, "
         "verify(play_game(3, 5)).violation_count]))\n")


def run_probe(root: Path) -> subprocess.CompletedProcess[str]:
    project = PACKAGE.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(project)])}
    return subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120, check=True)


def test_an_edited_core_runs_from_its_source_with_a_warning(tmp_path: Path) -> None:
    root = copy_of_the_package(tmp_path)
    untouched = run_probe(root)
    assert "compiled form is older" not in untouched.stderr
    rng = root / "verifier" / "rng.py"
    rng.write_text(rng.read_text() + "\n# edited after the build\n")
    edited = run_probe(root)
    files = json.loads(edited.stdout)
    # Every compiled module runs from its source (not only the edited one), from the copy, and still judges.
    assert all(f.startswith(str(root)) and f.endswith(".py") for f in files[:3]), files
    assert files[3] == json.loads(untouched.stdout)[3] == 0
    assert "compiled form is older than its source (verifier.rng)" in edited.stderr
    assert "make native" in edited.stderr


GOLDEN = sorted((PACKAGE.parent / "tests" / "golden" / "logs").iterdir())

JUDGE = ("import hashlib, json, sys\n"
         "from pathlib import Path\n"
         "from clients.selfplay import play_game\n"
         "from sgsverify.v1 import game_log_pb2 as pb\n"
         "from verifier import load_log, verify\n"
         "from verifier._native import is_compiled\n"
         "import verifier.replay\n"
         "logs = [load_log(Path(p).read_bytes()) for p in sys.argv[1:]]\n"
         "logs += [play_game(s, n) for s, n in ((1, 4), (2, 5), (3, 8), (4, 10))]\n"
         "logs += [play_game(s, 6, mode=pb.MODE_HEGEMONY) for s in (5, 6)]\n"
         "print(json.dumps([is_compiled(verifier.replay)] + [hashlib.sha256(verify(log).SerializeToString("
         "deterministic=True)).hexdigest() for log in logs]))\n")


def judged(interpreted: bool) -> list[object]:
    env = {**os.environ, "SGS_VERIFY_INTERPRETED": "1" if interpreted else ""}
    done = subprocess.run([sys.executable, "-c", JUDGE, *map(str, GOLDEN)], cwd=PACKAGE.parent, env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    assert "compiled form is older" not in done.stderr
    out: list[object] = json.loads(done.stdout)
    return out


def test_the_compiled_core_judges_every_log_as_its_source_does() -> None:
    if not recorded_sources():
        pytest.skip("an interpreted build: nothing compiled to compare")
    compiled, interpreted = judged(False), judged(True)
    assert compiled[0] is True and interpreted[0] is False
    # The golden corpus (every kind of violation it has) and self-play games of both modes: the same bytes.
    assert len(compiled) == 1 + len(GOLDEN) + 6
    assert compiled[1:] == interpreted[1:]
