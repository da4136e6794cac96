"""FreeKill (Qsgs-Fans/freekill-core): server transcripts and client replays (``.fk.rep``)."""
