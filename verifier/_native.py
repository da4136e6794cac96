"""The engine core's compiled form (mypyc, built by setup.py) and when it is not used.

Python loads a module's compiled form before its source when both are there, so an engine edited after
the build would silently run its old rules. The build records the hash of each compiled module's source
(``native_sources.txt``); if any source has changed since, every compiled module runs from its source
instead (all of them: compiled modules call each other directly, so they cannot be mixed with
interpreted ones), with a warning that says how to compile them again. ``SGS_VERIFY_INTERPRETED=1`` runs
the sources too, silently: to step through the core in a debugger or see it in a profile. Kept
interpreted itself, with nothing but the standard library: setup.py loads it to write the manifest.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
MANIFEST = PACKAGE / "native_sources.txt"
INTERPRETED = "SGS_VERIFY_INTERPRETED"  # set (to anything but "" or "0"): run the core from its sources


def source_manifest(names: Iterable[str], package: Path = PACKAGE) -> str:
    """The manifest of a build that compiles the named modules: one line each, its name and the SHA-256 of its
    source (written by setup.py, read by ``recorded_sources``)."""
    return "".join(f"{name} {source_hash(name, package)}\n" for name in names)


def source_hash(name: str, package: Path = PACKAGE) -> str:
    """The SHA-256 of a module's source, as the manifest records it (OSError if the source is gone)."""
    return hashlib.sha256(source_path(name, package).read_bytes()).hexdigest()


def recorded_sources(manifest: Path = MANIFEST) -> dict[str, str]:
    """The compiled modules and the hash of the source each was compiled from (none: nothing was compiled)."""
    try:
        text = manifest.read_text()
    except OSError:
        return {}
    return dict(line.split() for line in text.splitlines() if line.strip())


def source_path(name: str, package: Path = PACKAGE) -> Path:
    """The source of a module of the verifier package (``verifier.engine.game``: engine/game.py)."""
    return package.joinpath(*name.split(".")[1:]).with_suffix(".py")


def changed_sources(recorded: dict[str, str], package: Path = PACKAGE) -> list[str]:
    """The compiled modules whose source is no longer what was compiled."""
    changed = []
    for name, digest in recorded.items():
        try:
            actual = source_hash(name, package)
        except OSError:
            actual = ""
        if actual != digest:
            changed.append(name)
    return changed


def is_compiled(module: ModuleType) -> bool:
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)


class SourcesFirst(importlib.abc.MetaPathFinder):
    """Finds the named modules' sources, ahead of their compiled forms."""

    def __init__(self, names: Sequence[str], package: Path = PACKAGE) -> None:
        self.names = frozenset(names)
        self.package = package

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname, self.package))


def use_sources_where_needed() -> list[str]:
    """Called first thing by the verifier package: the compiled modules that run from their sources
    instead (all of them, if any source changed since the build or SGS_VERIFY_INTERPRETED is set; else
    none)."""
    recorded = recorded_sources()
    if not recorded:
        return []
    if os.environ.get(INTERPRETED, "") in ("", "0"):
        changed = changed_sources(recorded)
        if not changed:
            return []
        warnings.warn(f"the engine core's compiled form is older than its source ({', '.join(changed)}): it runs "
                      "interpreted, about 1.4 times slower; `make native` compiles it again", RuntimeWarning,
                      stacklevel=2)
    sys.meta_path.insert(0, SourcesFirst(list(recorded)))
    return list(recorded)
