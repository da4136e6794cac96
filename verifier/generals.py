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
