"""The 军争 (maneuvering) cards: the 52 that make the 160-card deck (ids 109-160), one unit per
card name. Used after the standard package, whose cards and effects it extends (its 杀 carries 酒).

Importing this package registers its cards, equipment effects and the 铁锁连环 damage rule on
``PACKAGE``.
"""

from verifier.packages.maneuvering import basic, delayed, equipment, tricks  # noqa: F401  (registration)
from verifier.packages.maneuvering.package import PACKAGE

__all__ = ["PACKAGE"]
