"""The hegemony deck's own cards (国战, docs/rules.md#hegemony-deck): 无懈可击·国, 以逸待劳, 知己知彼, 远交近攻,
吴六剑 and 三尖两刃刀, one unit each; the deck's other cards are the standard and 军争 ones.

Importing this package registers its cards, effects, the 三尖两刃刀 damage rule and the kingdom-wide
无懈可击 windows on ``PACKAGE``.
"""

from verifier.packages.hegemony import cards, equipment, nullification  # noqa: F401  (registration)
from verifier.packages.hegemony.package import PACKAGE

__all__ = ["PACKAGE"]
