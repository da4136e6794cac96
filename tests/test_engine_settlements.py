"""Game's settlements (its generator methods: card moves, draws, damage, ...) do nothing unless they are
run, and a bare call runs nothing: no warning, the card just does not move. Every call in the engine and
its packages must be driven (``yield from``, or handed on as a settlement)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generator_methods(path: Path, class_name: str) -> frozenset[str]:
    """The class's methods that are generators, read from its source (the core may run compiled, where
    methods are not Python functions to inspect)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)

    def yields(fn: ast.FunctionDef) -> bool:
        # (a yield inside a nested function or lambda belongs to that one)
        stack: list[ast.AST] = list(fn.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Yield | ast.YieldFrom):
                return True
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                stack.extend(ast.iter_child_nodes(node))
        return False

    return frozenset(n.name for n in cls.body if isinstance(n, ast.FunctionDef) and yields(n))


SETTLEMENTS = generator_methods(ROOT / "verifier" / "engine" / "game.py", "Game")


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
    assert "begin_phase" not in SETTLEMENTS and "emit" not in SETTLEMENTS  # (plain methods: no yield)


def test_no_settlement_is_called_without_being_run() -> None:
    found = [hit for path in sorted((ROOT / "verifier").rglob("*.py")) for hit in bare_calls(path)]
    assert found == []
