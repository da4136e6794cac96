"""Cheats: the mutator (mutator.py: a cheat kind's shape, its register ``KINDS``, ``find_mutations``), one module of
cheat kinds per rules package (standard.py, generals.py, hegemony.py, maneuvering.py, dark_souls.py, and
tournament.py for seed 003's clock and protection: each kind registers itself with ``mutator.cheat``), and the
cheating self-play (selfplay.py: a bot that cheats once inside a played game).

The kinds' modules are imported here, in the order their kinds are listed in KINDS (the order the corpus and
``sgs-verify cheats`` go through them): a new package's cheat kinds are a new module, imported here.
"""

# The standard kinds first, as KINDS has always listed them: the order is the import order, kept by hand.
# isort: off
from clients.cheats import standard  # noqa: F401  (each module registers its kinds)
from clients.cheats import generals, hegemony, maneuvering  # noqa: F401
from clients.cheats import dark_souls  # noqa: F401
from clients.cheats import tournament  # noqa: F401
# isort: on
