"""Example games for a new store (``sgs-verify serve --examples``, which ``make run`` uses): the two
documented example logs and a few self-play games, two of them with a cheat the verifier flags, so a
first look at the viewer has something to show. All are made here, deterministically: the same
examples every time (storing one twice is storing it once: a replay's id is its log's hash)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources

from clients.cheats.selfplay import CONSISTENT_KINDS, play_cheating_game
from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb

TOURNAMENT = "examples"


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    data: bytes  # a log, binary or JSON
    table: str


def _doc_example(name: str) -> bytes:
    # docs/ ships inside the package as service/web/docs (a link to the repository's docs/).
    return resources.files("service.web").joinpath("docs", "examples", name).read_bytes()


def _cheat(kind_name: str, players: int, generals: bool = False, packages: tuple[str, ...] = ()) -> pb.GameLog:
    kind = next(k for k in CONSISTENT_KINDS if k.name == kind_name)
    for seed in range(1, 40):
        game = play_cheating_game(seed, players, kind, packages=packages, generals=generals)
        if game.index is not None:
            return game.log
    raise LookupError(f"no seed below 40 offers a place for {kind_name}")


def examples() -> Iterator[Example]:
    yield Example("second_slash.json", _doc_example("second_slash.json"), "docs")
    yield Example("short_game.json", _doc_example("short_game.json"), "docs")
    yield Example("8 players, a second 杀", _cheat("second_slash", 8).SerializeToString(), "cheat-1")
    yield Example("6 players with generals, a 杀 out of range",
                  _cheat("slash_out_of_range", 6, generals=True).SerializeToString(), "cheat-2")
    yield Example("5 players, 军争 deck", play_game(4, 5, packages=("maneuvering",)).SerializeToString(), "selfplay-1")
    yield Example("6 players with generals", play_game(2, 6, generals=True).SerializeToString(), "selfplay-2")
