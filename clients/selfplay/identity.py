"""Self-play in identity mode (身份局) with the white generals: its header, and the random legal bot of the base
(RandomBot) as its bot."""

from __future__ import annotations

from collections.abc import Sequence

from clients.selfplay.base import RandomBot, register_bot, register_header
from sgsverify.v1 import game_log_pb2 as pb

register_bot("identity")(RandomBot)


@register_header(pb.MODE_IDENTITY)
def make_header(seed: int, players: int, role_variant: int = pb.ROLE_VARIANT_STANDARD,
                packages: Sequence[str] = (), generals: bool = False, rebirth: bool = False) -> pb.GameHeader:
    """``rebirth``: the rebirth variant (options.rebirth), which needs generals: it implies ``generals``."""
    header = pb.GameHeader(ruleset="identity/1", mode=pb.MODE_IDENTITY, seed=seed, recorder="sgs-verify selfplay")
    header.options.generals = pb.GENERALS_MODE_STANDARD if generals or rebirth else pb.GENERALS_MODE_WHITE
    if rebirth:
        header.options.rebirth = True
    header.options.packages.extend(packages)
    header.options.outcomes = pb.OUTCOME_RECORDING_COMPLETE
    header.options.role_variant = role_variant  # type: ignore[assignment]
    for i in range(players):
        header.seats.add(player=f"bot-{i}")
    return header
