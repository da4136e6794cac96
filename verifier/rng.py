"""The seeded, language-neutral random streams (specification: docs/rng.md).

Every chance event of a game draws from a stream derived from the game's seed and a
purpose label ("roles", "deck", "reshuffle/1", ...), so that adding a draw for one
purpose never shifts another. Only 64-bit integer arithmetic is used, so any language
can reproduce the same sequences.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import TypeVar

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3

T = TypeVar("T")


def mix64(z: int) -> int:
    """SplitMix64's finaliser: a bijection on 64-bit integers."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64-bit: hashes a stream's purpose label."""
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return h


class Stream:
    """One derived stream: SplitMix64 started from mix64(seed XOR fnv1a64(label))."""

    __slots__ = ("_state", "label")

    def __init__(self, seed: int, label: str) -> None:
        if not 0 <= seed <= MASK64:
            raise ValueError(f"seed must be a 64-bit unsigned integer, got {seed}")
        self.label = label
        self._state = mix64(seed ^ fnv1a64(label.encode("utf-8")))

    def next_u64(self) -> int:
        self._state = (self._state + GOLDEN_GAMMA) & MASK64
        return mix64(self._state)

    def below(self, n: int) -> int:
        """A uniform integer in [0, n), by rejection (no modulo bias)."""
        if n <= 0:
            raise ValueError("n must be positive")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Fisher-Yates from the last position down, in place: ``j = below(i + 1)`` for each i,
        with next_u64, mix64 and below written out (every game shuffles its deck)."""
        state = self._state
        for i in range(len(items) - 1, 0, -1):
            n = i + 1
            limit = (1 << 64) - ((1 << 64) % n)
            while True:
                state = (state + GOLDEN_GAMMA) & MASK64
                z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
                z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
                x = z ^ (z >> 31)
                if x < limit:
                    break
            j = x % n
            items[i], items[j] = items[j], items[i]
        self._state = state


def shuffled(seed: int, label: str, items: list[T]) -> list[T]:
    """A shuffled copy of items, drawn from the stream (seed, label)."""
    out = list(items)
    Stream(seed, label).shuffle(out)
    return out
