"""Builds the engine core as C extensions with mypyc (everything else is in pyproject.toml).

The modules in ``COMPILED`` are the engine's hot path: the replay driver, the core and the set-up, with the
helpers they call per event (texts, codes). Compiled, the same source runs about 1.4 times as fast
(bench/speed.py); the rules packages (cards, generals, modes) stay interpreted, so adding a general needs no
build. ``SGS_VERIFY_PURE=1`` builds nothing (no C compiler). Beside the extensions the build writes
``verifier/native_sources.txt`` (verifier/_native.py's manifest: the hash of each compiled module's source),
and verifier/_native.py runs a module's source instead of a compiled form that no longer matches it (an engine
edited after the build).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from setuptools import setup  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent
COMPILED = [
    "verifier/replay.py",
    "verifier/pairing.py",
    "verifier/engine/game.py",
    "verifier/engine/effects.py",
    "verifier/engine/requests.py",
    "verifier/engine/mode.py",
    "verifier/state.py",
    "verifier/cards.py",
    "verifier/rng.py",
    "verifier/wire.py",
    "verifier/setup.py",
    "verifier/generals.py",
    "verifier/codes.py",
    "verifier/text.py",
]
GROUP = "verifier_native"  # the compiled modules' shared library: verifier_native__mypyc


def native() -> ModuleType:
    """verifier/_native.py, which reads the manifest at run time and so writes it here too, loaded by path (the
    verifier package itself cannot be imported in the build, where its dependencies are not installed)."""
    spec = importlib.util.spec_from_file_location("_sgs_verify_native", ROOT / "verifier" / "_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extensions() -> list[object]:
    tool = native()
    if os.environ.get("SGS_VERIFY_PURE"):
        # An interpreted build: no compiled form of an earlier build may shadow the sources.
        tool.MANIFEST.unlink(missing_ok=True)
        for path in COMPILED:
            for built in (ROOT / path).parent.glob(Path(path).stem + ".cpython-*"):
                built.unlink()
        for shared in ROOT.glob(f"{GROUP}__mypyc.*"):
            shared.unlink()
        return []
    from mypyc.build import mypycify

    tool.MANIFEST.write_text(tool.source_manifest(path.removesuffix(".py").replace("/", ".") for path in COMPILED))
    return list(mypycify(COMPILED, opt_level="3", group_name=GROUP))


setup(ext_modules=extensions())
