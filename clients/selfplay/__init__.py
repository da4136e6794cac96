"""Self-play: bots play whole games through the engine, and the result is a complete log.

clients/selfplay/base.py holds the loop (``play``, ``play_game``), the random legal bot every mode's bot builds
on, and the registers; each mode's module registers its bot and its header: identity.py (white generals),
generals.py (the standard generals), rebirth.py (转世), dark_souls.py (暗魂), hegemony.py (国战, with its Wu and
Qun skills in hegemony_wu.py and hegemony_qun.py). tournament.py plays identity games with seed 003's last-three
clock and first-out protection (identity mode's bots: the rules need no decision of their own). A new mode is a new
module, imported here.
"""

from clients.selfplay import dark_souls, generals, hegemony, identity, rebirth  # noqa: F401  (each registers its mode)
from clients.selfplay.base import BotError, play, play_game

__all__ = ["BotError", "play", "play_game"]
