"""The physical cards: the deck tables shipped in verifier/data (docs/cards.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache
from importlib import resources


class Suit(IntEnum):
    NONE = 0
    SPADE = 1
    CLUB = 2
    HEART = 3
    DIAMOND = 4

    @property
    def is_red(self) -> bool:
        return self in (Suit.HEART, Suit.DIAMOND)

    @property
    def is_black(self) -> bool:
        return self in (Suit.SPADE, Suit.CLUB)

    @property
    def symbol(self) -> str:
        return "-♠♣♥♦"[self]


class Color(IntEnum):
    NONE = 0
    RED = 1
    BLACK = 2


def color_of(suit: Suit) -> Color:
    if suit.is_red:
        return Color.RED
    if suit.is_black:
        return Color.BLACK
    return Color.NONE


SUIT_NAMES = {"spade": Suit.SPADE, "club": Suit.CLUB, "heart": Suit.HEART, "diamond": Suit.DIAMOND}
NUMBER_NAMES = {1: "A", 11: "J", 12: "Q", 13: "K"}

WEAPON = "weapon"
ARMOR = "armor"
DEFENSIVE_HORSE = "defensive_horse"
OFFENSIVE_HORSE = "offensive_horse"
EQUIP_SLOTS = (WEAPON, ARMOR, DEFENSIVE_HORSE, OFFENSIVE_HORSE)


@dataclass(frozen=True, slots=True)
class CardDef:
    """One physical card of the deck."""

    id: int
    name: str  # name_en, e.g. "slash"
    name_zh: str
    suit: Suit
    number: int
    type: str  # basic | trick | delayed_trick | equip
    subtype: str  # for equipment: one of EQUIP_SLOTS
    attack_range: int  # weapons only
    nature: str  # "", "fire" or "thunder"
    package: str  # standard | standard_ex | maneuvering | hegemony
    color: Color = field(init=False, compare=False)  # from the suit (read on every card used)

    def __post_init__(self) -> None:
        object.__setattr__(self, "color", color_of(self.suit))

    def label(self) -> str:
        """A readable name, e.g. '杀 ♠7 (#14)'."""
        return f"{self.name_zh} {self.suit.symbol}{NUMBER_NAMES.get(self.number, str(self.number))} (#{self.id})"


def _parse_table(text: str) -> list[CardDef]:
    lines = [line for line in text.splitlines() if line.strip()]
    columns = lines[0].split("\t")
    cards = []
    for line in lines[1:]:
        row = dict(zip(columns, line.split("\t"), strict=False))
        cards.append(
            CardDef(
                id=int(row["id"]),
                name=row["name_en"],
                name_zh=row["name_zh"],
                suit=SUIT_NAMES[row["suit"]],
                number=int(row["number"]),
                type=row["type"],
                subtype=row.get("subtype", ""),
                attack_range=int(row["attack_range"]) if row.get("attack_range") else 0,
                nature=row.get("nature", ""),
                package=row["set"],
            )
        )
    return cards


def _read(name: str) -> str:
    return resources.files("verifier").joinpath("data", name).read_text(encoding="utf-8")


# The hegemony deck (国战, 108 cards) is numbered 201-308: ids stay unique across tables.
TABLES = {"standard": "cards_standard.tsv", "maneuvering": "cards_maneuvering.tsv", "hegemony": "cards_hegemony.tsv"}


@cache
def load_package(package: str) -> tuple[CardDef, ...]:
    """The cards of one deck package ("standard" includes the 4 EX cards)."""
    return tuple(_parse_table(_read(TABLES[package])))


@cache
def all_cards() -> dict[int, CardDef]:
    """Every known card by id, across packages (ids are unique across tables)."""
    out: dict[int, CardDef] = {}
    for package in TABLES:
        for card in load_package(package):
            out[card.id] = card
    return out


@cache
def _names_zh() -> dict[str, str]:
    out: dict[str, str] = {}
    for card in sorted(all_cards().values(), key=lambda c: c.id):
        out.setdefault(card.name, card.name_zh)
    return out


def card_name_zh(name: str) -> str:
    """A card name's Chinese, as cards are labelled (闪 for jink); the name itself when no deck has it."""
    return _names_zh().get(name, name)


@cache
def data_fingerprint() -> str:
    """A hash of the shipped data tables: part of the engine's identity."""
    h = hashlib.sha256()
    for name in sorted([*TABLES.values(), "generals_standard.tsv", "generals_hegemony.tsv"]):
        h.update(name.encode())
        h.update(_read(name).encode("utf-8"))
    return h.hexdigest()[:16]
