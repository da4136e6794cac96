"""sgs-verify: the Sanguosha rules oracle.

    >>> from verifier import verify, load_log
    >>> replay = verify(load_log(open("game.json", "rb").read()))
    >>> replay.violation_count
"""

from verifier.logio import LogFormatError, load_log
from verifier.replay import Verifier, verify
from verifier.version import engine_version

__all__ = ["LogFormatError", "Verifier", "engine_version", "load_log", "verify"]
