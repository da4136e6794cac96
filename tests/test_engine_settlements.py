"""Game's settlements (its generator methods: card moves, draws, damage, ...) do nothing unless they are
run, and a bare call runs nothing: no warning, the card just does not move. Every call in the engine and
its packages must be driven (``yield from``, or handed on as a settlement)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from verifier.engine.game import Game

ROOT = Path(__file__).resolve().parent.parent
SETTLEMENTS = frozenset(name for name, fn in inspect.getmembers(Game, inspect.isfunction)
                        if inspect.isgeneratorfunction(fn))


def bare_calls(path: Path) -> list[str]:
    """``game.<settlement>(...)`` written as a statement of its own (its result thrown away)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr in SETTLEMENTS:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {func.attr}")
    return out


def test_the_moves_are_settlements() -> None:
    assert {"to_processing", "to_discard", "to_hand", "to_judgment", "equip", "move_out"} <= SETTLEMENTS


def test_no_settlement_is_called_without_being_run() -> None:
    found = [hit for path in sorted((ROOT / "verifier").rglob("*.py")) for hit in bare_calls(path)]
    assert found == []
