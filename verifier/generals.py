"""The standard generals (verifier/data/generals_standard.tsv, docs/generals.md)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import _read

LORD_CANDIDATES = ("caocao", "liubei", "sunquan")
GENDERS = {"male": pb.GENDER_MALE, "female": pb.GENDER_FEMALE}


@dataclass(frozen=True, slots=True)
class GeneralDef:
    name: str  # name_en
    name_zh: str
    kingdom: str  # wei | shu | wu | qun
    max_hp: int
    gender: int
    skills: tuple[tuple[str, str], ...]  # (name_en, kind): kind is normal | locked | lord

    def skill_names(self, lord: bool) -> tuple[str, ...]:
        """The skills the general has: lord skills only while the general is the lord."""
        return tuple(name for name, kind in self.skills if kind != "lord" or lord)

    def lord_skills(self) -> tuple[str, ...]:
        return tuple(name for name, kind in self.skills if kind == "lord")


@cache
def standard_generals() -> dict[str, GeneralDef]:
    """The 25 standard generals by name_en, in table order."""
    lines = [line for line in _read("generals_standard.tsv").splitlines() if line.strip()]
    columns = lines[0].split("\t")
    out: dict[str, GeneralDef] = {}
    for line in lines[1:]:
        row = dict(zip(columns, line.split("\t"), strict=False))
        skills = []
        for part in row["skills"].split(";"):
            _zh, en, kind = part.split(":")
            skills.append((en, kind))
        out[row["name_en"]] = GeneralDef(row["name_en"], row["name_zh"], row["kingdom"], int(row["max_hp"]),
                                         GENDERS[row["gender"]], tuple(skills))
    return out


@cache
def skill_owners() -> dict[str, str]:
    """Every standard skill's name_en -> the general who has it."""
    return {skill: g.name for g in standard_generals().values() for skill, _ in g.skills}


@cache
def lord_skill_names() -> frozenset[str]:
    return frozenset(s for g in standard_generals().values() for s in g.lord_skills())


@dataclass(frozen=True, slots=True)
class HegemonyGeneralDef:
    """A hegemony general (verifier/data/generals_hegemony.tsv): HP in half fish, its companions."""

    name: str  # name_en
    name_zh: str
    kingdom: str  # wei | shu | wu | qun
    half_fish: int
    gender: int
    companions: tuple[str, ...]  # name_en of each companion (珠联璧合)
    skills: tuple[tuple[str, str], ...]  # (name_en, kind): kind is normal | locked | limited


@cache
def hegemony_generals() -> dict[str, HegemonyGeneralDef]:
    """The 60 hegemony generals by name_en, in table order."""
    lines = [line for line in _read("generals_hegemony.tsv").splitlines() if line.strip()]
    columns = lines[0].split("\t")
    out: dict[str, HegemonyGeneralDef] = {}
    for line in lines[1:]:
        row = dict(zip(columns, line.split("\t"), strict=False))
        skills = []
        for part in row["skills"].split(";"):
            _zh, en, kind = part.split(":")
            skills.append((en, kind))
        companions = tuple(c for c in row.get("companions", "").split(";") if c)
        out[row["name_en"]] = HegemonyGeneralDef(row["name_en"], row["name_zh"], row["kingdom"], int(row["half_fish"]),
                                                 GENDERS[row["gender"]], companions, tuple(skills))
    return out


def companions(a: str, b: str) -> bool:
    """Do the hegemony generals ``a`` and ``b`` form a 珠联璧合 pair (either lists the other)?"""
    g = hegemony_generals()
    return b in g[a].companions or a in g[b].companions
