"""The hegemony generals' skills (docs/generals-hegemony.md): the 60 generals (15 Wei, Shu, Wu and Qun), one unit per
skill; a skill whose hegemony text is its identity namesake's is that very unit
(verifier/packages/generals_standard), imported, not copied.

Importing this package registers every skill's effect on ``PACKAGE``.
"""

import verifier.packages.generals_hegemony.qun
import verifier.packages.generals_hegemony.shu
import verifier.packages.generals_hegemony.wei
import verifier.packages.generals_hegemony.wu  # noqa: F401  (registration)
from verifier.packages.generals_hegemony.package import PACKAGE

__all__ = ["PACKAGE"]
