"""Seed 003's tournament house rules (docs/rules.md#tournament-house-rules) as one registry: each rule is a
package of its own (last_three.py, first_out.py, dark_souls.py) that overrides identity mode's hooks and calls
``super()``, and registers itself here. The mode of a game that enables several is one class built from them
in the registry's order, so they combine without any of them knowing the others, and a new house rule edits
neither identity mode nor the engine core.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Violation
from verifier.packages.modes.identity import IdentityMode


@dataclass(frozen=True, slots=True)
class HouseRule:
    """One house rule: the header option (its GameOptions field name, for messages), whether a header enables
    it, and the mode class (an IdentityMode subclass) that carries its rules."""

    option: str
    enabled: Callable[[pb.GameOptions], bool]
    mode: type[IdentityMode]
    # Where its class goes among the others' when several combine (lower: earlier in the method order, so its
    # hooks run first and call the others' through super()).
    order: int


RULES: list[HouseRule] = []
_COMPOSED: dict[tuple[str, ...], type[IdentityMode]] = {}


def register(rule: HouseRule) -> HouseRule:
    RULES.append(rule)
    return rule


def enabled_rules(options: pb.GameOptions) -> list[HouseRule]:
    """The house rules ``options`` enables, in their order (their packages loaded first)."""
    load()
    return sorted((r for r in RULES if r.enabled(options)), key=lambda r: r.order)


def enabled_options(options: pb.GameOptions) -> list[str]:
    """The header options of the house rules ``options`` enables (a mode that plays none refuses them)."""
    return [r.option for r in enabled_rules(options)]


def check_options(header: pb.GameHeader) -> list[Violation]:
    """docs/rules.md#tournament-house-rules: the combinations no source plays (P-4: first-out protection with
    dark souls; dark souls with rebirth; seed 003's rules with seed 001's rebirth at all), and a protected seat
    at the table."""
    opts = header.options
    on = enabled_options(opts)
    problems: list[Violation] = []
    if opts.HasField("protected_seat") and opts.protected_seat >= len(header.seats):
        problems.append(Violation("BAD_HEADER", f"options.protected_seat {opts.protected_seat} is not at this "
                                  f"{len(header.seats)}-seat table (docs/rules.md#first-out-protection)"))
    if opts.HasField("protected_seat") and opts.dark_souls:
        problems.append(Violation("BAD_HEADER", "first-out protection (options.protected_seat) cannot be combined "
                                  "with dark souls (docs/rules.md#first-out-protection, P-4)"))
    if on and opts.rebirth:
        problems.append(Violation("BAD_HEADER", f"seed 003's house rules ({', '.join(on)}) cannot be combined with "
                                  "the rebirth variant (docs/rules.md#tournament-house-rules)"))
    return problems


def house_mode(options: pb.GameOptions) -> IdentityMode | None:
    """The mode of a game with the house rules ``options`` enable, one class per combination (made once);
    None when it enables none."""
    rules = enabled_rules(options)
    if not rules:
        return None
    key = tuple(r.option for r in rules)
    cls = _COMPOSED.get(key)
    if cls is None:
        bases = tuple(r.mode for r in rules)
        cls = _COMPOSED[key] = type("+".join(b.__name__ for b in bases), bases, {})
    mode = cls()
    mode.configure(options)
    return mode


def load() -> None:
    """Import the house rules' packages, each registering itself (idempotent)."""
    from verifier.packages.modes import dark_souls, first_out, last_three  # noqa: F401
