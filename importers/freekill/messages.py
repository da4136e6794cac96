"""The one shape both FreeKill inputs are read into: the server's messages, in order.

A server-side transcript holds every request, reply and notification of a room; a client
replay (``.fk.rep``) holds what one player's client received (no replies). Both become a
list of ``Message`` and the converter (``convert.py``) works from that list alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOTIFY = "notify"  # a server -> client message
REQUEST = "request"  # the server asks one player for a decision
REPLY = "reply"  # that player's answer (transcripts only)
# Who made a reply (the tap's ``by``): the player's client, FreeKill's AI standing in, or nobody (the default
# taken on a timeout). A transcript's ``ai_reply`` line is BY_AI.
BY_CLIENT, BY_AI, BY_NONE = "client", "ai", "none"


@dataclass(frozen=True, slots=True)
class Message:
    """One server message. ``data`` is the decoded payload (JSON or CBOR, maps keyed by
    strings); ``to`` the FreeKill player ids it went to (for a request or reply: the one
    player asked)."""

    seq: int  # its position in the source: the transcript's seq, or the replay's entry index
    kind: str  # NOTIFY, REQUEST or REPLY
    cmd: str
    data: Any
    to: tuple[int, ...] = ()
    by: str = ""  # a reply's maker (BY_CLIENT, BY_AI, BY_NONE); "" when the record does not say
