"""No import circle inside clients/ or verifier/, and each room importing only the rooms docs/architecture.md
allows it: run it with ``python -m pytest tests/test_import_rooms.py``.

Imports are read with ``ast`` from the sources (nothing is imported), into a graph of this tree's modules, whose
circles (strongly connected parts) are reported. An edge is drawn to the module an import names: ``from a.b
import c`` to ``a.b.c`` when that is a module of the tree, else to ``a.b``; importing ``a.b`` is not counted as
importing ``a`` (the package's ``__init__`` runs first, but its face is no import of the module's own).

Which imports count:
- module-level ones (at the top of a module, or under a top-level ``if``/``try``/``with``), everywhere: they run
  when the module is loaded, so a circle of them makes the load order matter;
- ``if TYPE_CHECKING:`` imports never run: in verifier/ they are not edges (the engine core's types name each
  other, verifier/engine/effects.py, game.py and mode.py); in clients/ they are;
- function-level imports (inside a def) run when the function is first called, after every module has loaded,
  so they cannot break an import: in verifier/ they are not edges (a rules package reaching the mode that
  installs it, modes/identity.py reaching modes/rebirth.py), in clients/ they are. clients/ counts every import
  because its rooms have none left: a mode's bot or a package's cheat kinds register themselves with the base,
  and the base never reaches back.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

Graph = dict[str, set[str]]


def modules(root: Path, top: str) -> dict[str, Path]:
    """Every module under the package ``top`` of ``root``, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted((root / top).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def named_modules(name: str, path: Path, node: ast.Import | ast.ImportFrom, known: Iterable[str]) -> Iterator[str]:
    """The modules of the tree that one import statement of module ``name`` names."""
    known = set(known)
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    for target in wanted:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            yield target


def imports(name: str, path: Path, known: Iterable[str], deferred: bool) -> set[str]:
    """The modules ``name`` imports: at module level, and with ``deferred`` also in functions and under
    ``if TYPE_CHECKING:``."""
    known = set(known)
    found: set[str] = set()

    def visit(body: list[ast.stmt], in_function: bool, typing_only: bool) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                if deferred or not (in_function or typing_only):
                    found.update(named_modules(name, path, node, known))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(node.body, True, typing_only)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, in_function, typing_only)
            elif isinstance(node, ast.If):
                typing = "TYPE_CHECKING" in ast.unparse(node.test)
                visit(node.body, in_function, typing_only or typing)
                visit(node.orelse, in_function, typing_only)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    visit(block, in_function, typing_only)
            elif isinstance(node, ast.With | ast.For | ast.While):
                visit(node.body, in_function, typing_only)

    visit(ast.parse(path.read_text(encoding="utf-8")).body, False, False)
    return found


def graph(root: Path, top: str, deferred: bool) -> Graph:
    mods = modules(root, top)
    return {name: imports(name, path, mods, deferred) & mods.keys() for name, path in mods.items()}


def circles(g: Graph) -> list[list[str]]:
    """The graph's circles: each set of two or more modules that reach one another (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(g):
        if v not in index:
            connect(v)
    return sorted(found)


def described(found: list[list[str]], g: Graph) -> str:
    return "; ".join(" ".join(f"{a} -> {sorted(g[a] & set(part))}" for a in part) for part in found)


def test_no_circle_inside_clients_counting_every_import() -> None:
    g = graph(ROOT, "clients", deferred=True)
    assert "clients.selfplay.base" in g and "clients.cheats.mutator" in g
    assert circles(g) == [], described(circles(g), g)


def test_no_circle_inside_verifier_at_module_level() -> None:
    g = graph(ROOT, "verifier", deferred=False)
    assert "verifier.replay" in g and "verifier.pairing" in g
    assert circles(g) == [], described(circles(g), g)


# The rooms of docs/architecture.md, by module-name prefix (the longest prefix names a module's room), and the
# rooms each may import, every import counted (deferred ones too). Modules outside these packages (sgsverify,
# the standard library, third parties) are not rooms.
ROOMS = {
    "clients": "client library",  # client.py, progress.py, files.py, interrupts.py
    "clients.selfplay": "self-play",
    "clients.cheats": "cheats",
    "clients.bridge": "bridge",
    "clients.cli": "command line",
    "clients.commands": "command line",
    "verifier": "verifier",
    "verifier.engine": "engine core",
    "verifier.packages": "rules packages",
    "importers": "importers",
    "service": "service",
    "storage": "storage",
}
MAY_IMPORT = {
    "engine core": {"verifier"},
    "verifier": {"engine core", "rules packages"},  # (the set-up assembles the packages; the core never does)
    "rules packages": {"engine core", "verifier"},
    "importers": {"verifier"},
    "client library": {"verifier"},
    "self-play": {"verifier", "engine core", "rules packages"},
    "cheats": {"self-play", "verifier", "engine core", "rules packages"},
    "bridge": {"client library", "importers"},  # (what the verifier says of a room, the importer asks it)
    "command line": {"client library", "self-play", "cheats", "bridge", "importers", "service", "storage",
                     "verifier"},
}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        room = ROOMS.get(".".join(parts[:n]))
        if room is not None:
            return room
    return None


def test_each_room_imports_only_the_rooms_it_may() -> None:
    mods: dict[str, Path] = {}
    for top in ("clients", "verifier", "importers", "service", "storage"):
        mods.update(modules(ROOT, top))
    wrong = []
    for name, path in mods.items():
        room = room_of(name)
        if room not in MAY_IMPORT:
            continue
        for target in sorted(imports(name, path, mods, deferred=True)):
            other = room_of(target)
            if other != room and other not in MAY_IMPORT[room]:
                wrong.append(f"{name} ({room}) imports {target} ({other})")
    assert wrong == []


def test_a_circle_is_found_at_module_level_and_a_deferred_one_only_when_asked(tmp_path: Path) -> None:
    package = tmp_path / "house"
    (package / "rooms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "rooms" / "__init__.py").write_text("from house.rooms import a  # noqa\n")
    (package / "rooms" / "a.py").write_text("from house.rooms.b import B\n")
    (package / "rooms" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                            "    from house.rooms.c import C\nB = 1\n")
    (package / "rooms" / "c.py").write_text("from . import a\n")
    (package / "d.py").write_text("def late() -> None:\n    from house import e\n")
    (package / "e.py").write_text("from house.d import late\n")
    assert circles(graph(tmp_path, "house", deferred=False)) == []
    assert circles(graph(tmp_path, "house", deferred=True)) == [
        ["house.d", "house.e"], ["house.rooms.a", "house.rooms.b", "house.rooms.c"]]
    (package / "rooms" / "b.py").write_text("from house.rooms.c import C\n")
    assert circles(graph(tmp_path, "house", deferred=False)) == [["house.rooms.a", "house.rooms.b", "house.rooms.c"]]
