"""Self-play's registers (clients/selfplay/base.py): each mode's module, and each identity variant's, hands in its
bot; the base names no mode or variant (issue 32: a new mode's bots are added without editing the base)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clients.selfplay.base import BOTS, VARIANTS, RandomBot, bot_kind, make_bot, register_bot
from clients.selfplay.identity import make_header
from sgsverify.v1 import game_log_pb2 as pb


def identity(**options: bool) -> pb.GameHeader:
    header = make_header(7, 5, generals=options.pop("generals", False), rebirth=options.pop("rebirth", False))
    for name, value in options.items():
        setattr(header.options, name, value)
    return header


def test_each_identity_variant_gets_the_bot_that_needs_the_most() -> None:
    assert bot_kind(identity()) == "identity"
    assert bot_kind(identity(generals=True)) == "generals"
    assert bot_kind(identity(generals=True, dark_souls=True)) == "dark_souls"  # above the generals' bot
    assert bot_kind(identity(rebirth=True)) == "rebirth"
    hegemony = pb.GameHeader(mode=pb.MODE_HEGEMONY)
    assert bot_kind(hegemony) == "hegemony"
    assert [kind for _, kind, _ in VARIANTS] == ["rebirth", "dark_souls", "generals"]


@pytest.fixture
def registers() -> Iterator[None]:
    """The registers as they were, after a test that registers a variant of its own."""
    bots, variants = dict(BOTS), list(VARIANTS)
    yield
    BOTS.clear()
    BOTS.update(bots)
    VARIANTS[:] = variants


def test_a_new_variant_registers_its_bot_without_editing_the_base(registers: None) -> None:
    @register_bot("clocked", plays=lambda header: header.options.last_three_clock, rank=15)
    class ClockedBot(RandomBot):
        pass

    clocked = identity(generals=True, last_three_clock=True)
    assert bot_kind(clocked) == "clocked"  # above the generals (10), below dark souls (20)
    assert isinstance(make_bot(clocked), ClockedBot)
    assert bot_kind(identity(generals=True, dark_souls=True, last_three_clock=True)) == "dark_souls"
