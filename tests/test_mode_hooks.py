"""The mode hooks seed 003's house rules stand on (verifier/engine/mode.py): a round's beginning, every HP
change, every card use. Probed with modes that record what the core tells them, on seeded self-play."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clients.selfplay.base import HEADERS, make_bot, play
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify
from verifier.engine.game import Game, Settle
from verifier.packages.modes import identity
from verifier.packages.modes.identity import IdentityMode

SEEDS = range(1, 9)


class Probe(IdentityMode):
    """Records what the core tells the hooks; changes nothing."""

    round_hook = True
    hp_hook = True
    use_hook = True

    def __init__(self) -> None:
        self.rounds: list[tuple[int, int]] = []  # (round, the number of the turn that follows)
        self.hp: list[tuple[int, int, int | None, bool]] = []
        self.uses: list[tuple[int, str, tuple[int, ...]]] = []

    def round_begins(self, game: Game, round_number: int) -> Settle[None]:
        self.rounds.append((round_number, game.turn_number + 1))
        return None
        yield  # pragma: no cover

    def hp_change(self, game: Game, seat: int, amount: int, source: int | None, is_damage: bool
                  ) -> Settle[tuple[int, str]]:
        self.hp.append((seat, amount, source, is_damage))
        return amount, ""
        yield  # pragma: no cover

    def card_used(self, game: Game, user: int, card_name: str, targets: tuple[int, ...]) -> None:
        self.uses.append((user, card_name, targets))


class KeepOne(IdentityMode):
    """Keeps the target of the game's first lethal damage at 1 HP (as first-out protection would), and names its
    own code for a log that disagrees on that."""

    hp_hook = True

    def __init__(self) -> None:
        self.kept = False

    def hp_change(self, game: Game, seat: int, amount: int, source: int | None, is_damage: bool
                  ) -> Settle[tuple[int, str]]:
        hp = game.players[seat].hp
        if is_damage and amount >= hp and not self.kept:
            self.kept = True
            return hp - 1, "RECOVER_MISMATCH"
        return amount, ""
        yield  # pragma: no cover


@pytest.fixture
def with_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    made: dict[str, Any] = {"cls": Probe, "modes": []}

    def mode_for(header: pb.GameHeader) -> IdentityMode:
        mode: IdentityMode = made["cls"]()
        made["modes"].append(mode)
        return mode

    monkeypatch.setattr(identity, "identity_mode", mode_for)
    yield made


def game(seed: int, players: int = 5) -> pb.GameLog:
    header = HEADERS[pb.MODE_IDENTITY](seed, players, pb.ROLE_VARIANT_STANDARD, ("maneuvering",), False, False)
    return play(header, make_bot(header))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_round_begins_before_each_turn_of_the_first_seat(with_mode: dict[str, Any], seed: int) -> None:
    log = game(seed)
    probe = with_mode["modes"][0]
    turns = [e.turn_start for e in log.events if e.HasField("turn_start")]
    lord = turns[0].seat
    # white generals: no extra turns, nobody turned over, and the lord's death ends the game
    assert [t for _, t in probe.rounds] == [t.turn for t in turns if t.seat == lord]
    assert [r for r, _ in probe.rounds] == list(range(1, len(probe.rounds) + 1))


@pytest.mark.parametrize("seed", SEEDS)
def test_every_hp_change_and_card_use_reaches_the_mode(with_mode: dict[str, Any], seed: int) -> None:
    log = game(seed)
    probe = with_mode["modes"][0]
    changes = [(e.damage.target, e.damage.amount, e.damage.source if e.damage.HasField("source") else None, True)
               if e.HasField("damage") else (e.lose_hp.seat, e.lose_hp.amount, None, False)
               for e in log.events if e.HasField("damage") or e.HasField("lose_hp")]
    assert probe.hp == changes
    used = [(e.use_card.seat, e.use_card.targets) for e in log.events if e.HasField("use_card")
            and not e.use_card.recast]
    assert [u for u, _, _ in probe.uses] == [seat for seat, _ in used]
    # a card chosen with targets is told with them (南蛮入侵 and the like: with those the rules give)
    assert all(tuple(named) == told for (_, named), (_, _, told) in zip(used, probe.uses, strict=True) if named)
    assert any(changes)


def test_an_hp_hook_changes_the_damage_and_names_the_code(with_mode: dict[str, Any]) -> None:
    # (a game whose first lethal damage is of 2 or more: the hook lessens it, where it would prevent a 1 whole)
    seed = next(s for s in range(1, 60) if next(e.damage.amount for e in game(s).events
                                                  if e.HasField("damage") and e.damage.hp_after <= 0) > 1)
    plain = game(seed)
    with_mode["cls"] = KeepOne
    kept = game(seed)
    assert kept.events != plain.events
    assert verify(kept).violation_count == 0
    # the plain game's log judged under the hook: its first lethal damage (to 0 HP or below, where the hook keeps
    # the character at 1) is reported with the hook's code
    judged = verify(plain)
    first = next(i for i, e in enumerate(plain.events) if e.HasField("damage") and e.damage.hp_after <= 0)
    codes = [v.code for a in judged.annotations if a.index == first for v in a.violations]
    assert codes and set(codes) == {"RECOVER_MISMATCH"}
