"""The 25 standard generals' 40 skills (docs/generals.md): one unit per skill, by kingdom.

Importing this package registers every skill's effect on ``PACKAGE``.
"""

import verifier.packages.generals_standard.qun
import verifier.packages.generals_standard.shu
import verifier.packages.generals_standard.wei
import verifier.packages.generals_standard.wu  # noqa: F401  (registration)
from verifier.packages.generals_standard.package import PACKAGE

__all__ = ["PACKAGE"]
