"""FreeKill's card table, and the map from FreeKill's card ids to ours.

FreeKill numbers the 160 cards of standard + 军争 in its own order; we number them by our deck
tables (docs/cards.md). Cards are matched by (name, suit, number): identical duplicates (two
♠8 杀) are interchangeable, so they are paired in id order. A table exists per FreeKill version
and package set (``data/cards-<version>.tsv``); anything else is refused, never guessed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources

from verifier.cards import CardDef, load_package

# FreeKill's names where they differ from ours (the rest are the same).
NAMES = {
    "fire__slash": "fire_slash",
    "thunder__slash": "thunder_slash",
    "double_swords": "double_sword",
    "nioh_shield": "renwang_shield",
}
# FreeKill's package names -> ours ("standard" is always in; "maneuvering" is 军争).
PACKAGES = {"standard_cards": "standard", "maneuvering": "maneuvering"}
# FreeKill's suits in card maps ("3"): 1 spade, 2 club, 3 heart, 4 diamond (its Card enum).
SUITS = {1: "spade", 2: "club", 3: "heart", 4: "diamond"}
KNOWN_VERSIONS = ("88a912f1",)
# Names a real card may be shown under while it counts as another card (国色's 乐不思蜀).
VIEWED_AS = frozenset({"indulgence"})


class CardTableError(ValueError):
    """No card table for this FreeKill version or package set, or the record contradicts it."""


@dataclass(frozen=True, slots=True)
class FreeKillCard:
    fk_id: int
    name: str  # ours
    suit: str
    number: int
    package: str  # ours


@dataclass(frozen=True, slots=True)
class CardTable:
    version: str
    packages: tuple[str, ...]  # ours, e.g. ("standard", "maneuvering")
    cards: dict[int, FreeKillCard]  # by FreeKill id
    to_ours: dict[int, int]  # FreeKill id -> our id

    def ours(self, fk_id: int) -> int:
        try:
            return self.to_ours[fk_id]
        except KeyError:
            raise CardTableError(f"card id {fk_id} is not in FreeKill {self.version}'s table "
                                 f"({'+'.join(self.packages)})") from None

    def check_fact(self, fk_id: int, name: str, suit: int, number: int) -> None:
        """A card as the record describes it (a ``beforeCard`` map) must be the table's card."""
        card = self.cards.get(fk_id)
        fk_name = NAMES.get(name, name)
        # 国色 places a ♦ card as 乐不思蜀: the record then shows it under that name.
        renamed = card is not None and fk_name in VIEWED_AS and card.name != fk_name
        if card is None or (card.name != fk_name and not renamed) or SUITS.get(suit) != card.suit \
                or card.number != number:
            have = f"{card.name} {card.suit} {card.number}" if card else "nothing"
            raise CardTableError(f"the record shows card {fk_id} as {fk_name} {SUITS.get(suit, suit)} {number}, "
                                 f"but FreeKill {self.version}'s table has {have}: the game is from another "
                                 "FreeKill version or card set")


def _parse(text: str) -> list[FreeKillCard]:
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#") or line.startswith("id\t"):
            continue
        fk_id, name, suit, number, _type, _sub, package = line.split("\t")
        out.append(FreeKillCard(int(fk_id), NAMES.get(name, name), suit, int(number), PACKAGES[package]))
    return out


@cache
def card_table(version: str, packages: tuple[str, ...] = ("standard", "maneuvering")) -> CardTable:
    """The table for FreeKill ``version`` restricted to ``packages`` (ours), mapped to our ids."""
    if version not in KNOWN_VERSIONS:
        raise CardTableError(f"no card table for FreeKill version {version!r} (known: {', '.join(KNOWN_VERSIONS)})")
    text = resources.files("importers.freekill").joinpath(f"data/cards-{version}.tsv").read_text(encoding="utf-8")
    fk_cards = [c for c in _parse(text) if c.package in packages]
    missing = set(packages) - {c.package for c in fk_cards}
    if missing:
        raise CardTableError(f"FreeKill {version}'s table has no package {', '.join(sorted(missing))}")
    ours: list[CardDef] = [c for p in packages for c in load_package(p)]
    pool: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for card in sorted(ours, key=lambda c: c.id):
        pool[(card.name, card.suit.name.lower(), card.number)].append(card.id)
    to_ours: dict[int, int] = {}
    for fk in sorted(fk_cards, key=lambda c: c.fk_id):
        ids = pool.get((fk.name, fk.suit, fk.number))
        if not ids:
            raise CardTableError(f"FreeKill card {fk.fk_id} ({fk.name} {fk.suit} {fk.number}) has no counterpart "
                                 "in our deck tables")
        to_ours[fk.fk_id] = ids.pop(0)
    left = [i for ids in pool.values() for i in ids]
    if left:
        raise CardTableError(f"our cards {sorted(left)} have no counterpart in FreeKill {version}'s table")
    return CardTable(version, packages, {c.fk_id: c for c in fk_cards}, to_ours)
