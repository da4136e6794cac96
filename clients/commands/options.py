"""Command-line option types shared by several commands."""

from __future__ import annotations

import argparse

from verifier.setup import KNOWN_PACKAGES


def card_packages(text: str) -> list[str]:
    """``--packages``: extra card packages, comma-separated (argparse reports a bad name)."""
    packages = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [pkg for pkg in packages if pkg not in KNOWN_PACKAGES]
    if unknown:
        known = ", ".join(sorted(KNOWN_PACKAGES - {"standard"}))
        raise argparse.ArgumentTypeError(f"unknown card package {unknown[0]!r}; known: {known}")
    return packages


def positive_int(text: str) -> int:
    """A whole number greater than 0 (argparse reports anything else as a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {value}")
    return value


def positive_seconds(text: str) -> float:
    """A number of seconds greater than 0 (argparse reports anything else as a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return value


def protected_seat_option(text: str) -> int:
    """``--protected-seat`` (seed 003's first-out protection): a seat number, or "seeded" for a seat drawn from each
    game's seed (clients.selfplay.tournament.SEEDED)."""
    if text == "seeded":
        from clients.selfplay.tournament import SEEDED  # (the engine is loaded only when the option is given)

        return SEEDED
    try:
        seat = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seat number or 'seeded', not {text!r}") from None
    if seat < 0:
        raise argparse.ArgumentTypeError(f"a seat number is 0 or more, not {seat}")
    return seat
