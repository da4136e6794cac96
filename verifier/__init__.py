"""sgs-verify: the Sanguosha rules oracle.

    >>> from verifier import verify, load_log
    >>> replay = verify(load_log(open("game.json", "rb").read()))
    >>> replay.violation_count
"""

from verifier._native import use_sources_where_needed

use_sources_where_needed()  # (before any compiled module is imported)

from verifier.logio import LogFormatError, load_log  # noqa: E402
from verifier.replay import Verifier, verify  # noqa: E402
from verifier.version import engine_version  # noqa: E402

__all__ = ["LogFormatError", "Verifier", "engine_version", "load_log", "verify"]
