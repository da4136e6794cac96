"""FreeKill (Qsgs-Fans/freekill-core): server transcripts, client replays (``.fk.rep``) and the
client's database of replays -> our logs.

``import_freekill(data, name)`` is the library call for one record, ``import_records`` for any
input (a database holds several) (api.py); ``sgs-verify import freekill`` the command.
"""

from importers.freekill.api import (
    DATABASE,
    FKREP,
    KIND_NAMES,
    TRANSCRIPT,
    Imported,
    Record,
    import_freekill,
    import_records,
    sniff,
    unambiguous,
)
from importers.freekill.convert import ImportFailure

__all__ = ["DATABASE", "FKREP", "KIND_NAMES", "TRANSCRIPT", "ImportFailure", "Imported", "Record", "import_freekill",
           "import_records", "sniff", "unambiguous"]
