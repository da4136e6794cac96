"""The standard deck (标准版, 104 cards + 4 EX): one unit per card name.

Importing this package registers its cards and equipment effects on ``PACKAGE``.
"""

from verifier.packages.standard import basic, delayed, equipment, tricks  # noqa: F401  (registration)
from verifier.packages.standard.package import PACKAGE

__all__ = ["PACKAGE"]
