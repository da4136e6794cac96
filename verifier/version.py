"""The engine's identity: package version plus a fingerprint of its rules and data.

Two annotated replays made by engines with equal ``engine_version()`` must be identical;
any change to the engine's code or data tables changes the fingerprint.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

__version__ = "0.1.0"


@cache
def rules_fingerprint() -> str:
    """A hash of the engine's source (core, packages, replay) and its data tables."""
    h = hashlib.sha256()
    root = resources.files("verifier")
    stack = [root]
    files = []
    while stack:
        node = stack.pop()
        for child in node.iterdir():
            if child.is_dir():
                if child.name != "__pycache__":
                    stack.append(child)
            elif child.name.endswith((".py", ".tsv")):
                files.append(child)
    for f in sorted(files, key=lambda t: str(t)):
        rel = str(f).split("verifier", 1)[-1]
        h.update(rel.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def engine_version() -> str:
    return f"sgs-verify {__version__}+rules.{rules_fingerprint()}"
