"""FreeKill (Qsgs-Fans/freekill-core): server transcripts and client replays (``.fk.rep``) -> our logs.

``import_freekill(data, name)`` is the library call (api.py); ``sgs-verify import freekill`` the command.
"""

from importers.freekill.api import FKREP, TRANSCRIPT, Imported, import_freekill
from importers.freekill.convert import ImportFailure

__all__ = ["FKREP", "TRANSCRIPT", "ImportFailure", "Imported", "import_freekill"]
