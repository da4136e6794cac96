"""How the verifier judges real FreeKill games against the list of what FreeKill's server let through.

    python tools/freekill_report.py TRANSCRIPTS... --deviations LIST [--json]
    python tools/freekill_report.py tests/data/freekill/transcripts --deviations tests/data/freekill/deviations.jsonl

TRANSCRIPTS are FreeKill server transcripts (``*.jsonl``, or compressed ``*.jsonl.xz``), folders of
them, or ``.tar.xz`` archives of them. The deviations file lists, one JSON object per line, every
action of those games that breaks the rules (``game``, transcript ``seq``, ``kind``, ``what``).

Each game is imported and verified. A deviation is *flagged* when the decision it sits on (the last
decision at or before its ``seq``) carries a violation; the report prints, per kind of
deviation, how many are listed and with which codes they were flagged, the ones not flagged (and, when
the verifier stopped following the log before them, why), and every other violation (the target: none).
Exit status 0 when every deviation is flagged and nothing else is, 1 otherwise, 2 when an input cannot be
read or imported.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from importers.freekill import ImportFailure, import_freekill  # noqa: E402
from sgsverify.v1 import game_log_pb2 as pb  # noqa: E402
from verifier import verify  # noqa: E402
from verifier.engine.requests import DECISION_KINDS  # noqa: E402


@dataclass
class GameReport:
    game: str
    verdict: dict[str, Any] = field(default_factory=dict)  # the exact verdict (--expected)
    events: int = 0
    followed: bool = True
    stopped_at: int | None = None
    stopped_reason: str = ""
    flagged: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    missed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    others: list[tuple[int, int, str, str]] = field(default_factory=list)  # (event, seq, code, message)
    error: str = ""


def transcripts(paths: list[Path]) -> Iterator[tuple[str, bytes]]:
    """(file name, bytes) of every transcript in the inputs, in name order."""
    found: list[tuple[str, bytes]] = []
    for path in paths:
        if not path.exists():
            raise ValueError(f"{path}: no such file or folder")
        if path.is_dir():
            found += [(game_name(p.name), p.read_bytes()) for p in path.iterdir() if is_transcript(p.name)]
        elif path.name.endswith((".tar.xz", ".tar.gz", ".tar")):
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.endswith(".jsonl"):
                        data = tar.extractfile(member)
                        if data is not None:
                            found.append((Path(member.name).name, data.read()))
        else:
            found.append((game_name(path.name), path.read_bytes()))
    yield from sorted(found)


def is_transcript(name: str) -> bool:
    return name.endswith((".jsonl", ".jsonl.xz", ".jsonl.gz"))


def game_name(name: str) -> str:
    """The game a file holds, as the deviations name it (``fk_p4_r1.jsonl``; compression left out)."""
    for suffix in (".xz", ".gz"):
        name = name.removesuffix(suffix)
    return name


def judge_game(name: str, data: bytes, deviations: list[dict[str, Any]]) -> GameReport:
    report = GameReport(name)
    try:
        imported = import_freekill(data, name)
    except ImportFailure as err:
        report.error = str(err)
        return report
    log, sources = imported.log, imported.sources
    replay = verify(log)
    report.verdict = {
        "events": len(log.events), "followed": replay.followed, "finished": replay.result.finished,
        "side": pb.Side.Name(replay.result.side), "winners": list(replay.result.winners),
        "header_notices": [n.code for n in replay.header_notices],
        "violations": [[a.index, v.code] for a in replay.annotations for v in a.violations]}
    report.events = len(log.events)
    report.followed = replay.followed
    if not replay.followed:
        report.stopped_at, report.stopped_reason = replay.stopped_at, replay.stopped_reason
    by_event: dict[int, list[tuple[str, str]]] = collections.defaultdict(list)
    for ann in replay.annotations:
        for v in ann.violations:
            by_event[ann.index].append((v.code, v.message))
    for v in replay.header_violations:
        report.others.append((-1, -1, v.code, v.message))
    claimed: set[int] = set()
    decisions = [i for i, ev in enumerate(log.events) if ev.WhichOneof("kind") in DECISION_KINDS]
    for dev in deviations:
        # The decision the deviation sits on: the last one at or before its position in the transcript.
        index = None
        for i in decisions:
            if sources[i] > dev["seq"]:
                break
            index = i
        if index is not None and by_event.get(index):
            report.flagged.append((dev, [code for code, _ in by_event[index]]))
            claimed.add(index)
        elif report.stopped_at is not None and (index is None or index >= report.stopped_at):
            report.missed.append((dev, f"not reached: the verifier stopped following the log at event "
                                       f"{report.stopped_at} ({report.stopped_reason})"))
        else:
            report.missed.append((dev, f"not flagged (event {index})"))
    for index, items in sorted(by_event.items()):
        if index not in claimed:
            for code, message in items:
                report.others.append((index, sources[index] if index < len(sources) else -1, code, message))
    return report


def read_deviations(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The deviations file, by game; ValueError (naming the file and line) for one it cannot read."""
    listed: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"--deviations {path}: cannot read it ({err.strerror}); it is an input, the list of what "
                         "FreeKill's server let through (tests/data/freekill/deviations.jsonl: the test data's)"
                         ) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            dev = json.loads(line)
            if not isinstance(dev, dict) or not isinstance(dev["game"], str) or not isinstance(dev["seq"], int):
                raise ValueError("not an object with a game and a seq")
            dev.setdefault("kind", "?")
            dev.setdefault("what", "")
        except (ValueError, KeyError) as err:
            raise ValueError(f"--deviations {path} line {number}: not a deviation ({err})") from None
        listed[dev["game"]].append(dev)
    return listed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="e.g. tools/freekill_report.py tests/data/freekill/transcripts "
                                     "--deviations tests/data/freekill/deviations.jsonl (the 25 games of the test data "
                                     "and what FreeKill's server let through in them)")
    parser.add_argument("inputs", nargs="+", type=Path, metavar="TRANSCRIPTS",
                        help="FreeKill server transcripts (.jsonl, .jsonl.xz), folders of them, or .tar.xz archives")
    parser.add_argument("--deviations", type=Path, required=True, metavar="LIST",
                        help="read: the actions of those games that break the rules, one JSON object per line "
                        "(game, seq, kind, what); tests/data/freekill/deviations.jsonl lists the test games'")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    parser.add_argument("--expected", type=Path, metavar="FILE",
                        help="also write each game's exact verdict (events, result, violations by event) to FILE "
                        "as JSON: tests/data/freekill/expected.json is made so")
    args = parser.parse_args(argv)
    try:
        listed = read_deviations(args.deviations)
        inputs = list(transcripts(args.inputs))
    except (OSError, ValueError, tarfile.TarError) as err:
        print(f"freekill_report: {err}", file=sys.stderr)
        return 2
    if not inputs:
        print(f"freekill_report: no transcript (.jsonl, .jsonl.xz, .jsonl.gz) in {' '.join(map(str, args.inputs))}",
              file=sys.stderr)
        return 2
    reports = [judge_game(name, data, listed.get(name, [])) for name, data in inputs]
    per_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    listed_kind: collections.Counter[str] = collections.Counter()
    for r in reports:
        for dev, codes in r.flagged:
            listed_kind[dev["kind"]] += 1
            per_kind[dev["kind"]]["+".join(sorted(set(codes)))] += 1
        for dev, _why in r.missed:
            listed_kind[dev["kind"]] += 1
            per_kind[dev["kind"]]["(not flagged)"] += 1
    failed = [r for r in reports if r.error]
    if args.expected is not None:
        body = {r.game: r.verdict for r in reports if not r.error}
        args.expected.write_text(json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
    others = [(r.game, *o) for r in reports for o in r.others]
    missed = [(r.game, dev, why) for r in reports for dev, why in r.missed]
    if args.json:
        print(json.dumps({
            "games": len(reports), "imported": len(reports) - len(failed),
            "clean": sum(1 for r in reports if not r.error and not r.others and not r.missed and not r.flagged),
            "deviations": {k: {"listed": listed_kind[k], "flagged_with": dict(per_kind[k])}
                           for k in sorted(listed_kind)},
            "missed": [{"game": g, **d, "why": w} for g, d, w in missed],
            "other_violations": [{"game": g, "event": e, "seq": s, "code": c, "message": m}
                                 for g, e, s, c, m in others],
            "import_failures": [{"game": r.game, "error": r.error} for r in failed],
        }, ensure_ascii=False, indent=1))
    else:
        print(f"{len(reports)} game(s): {len(reports) - len(failed)} imported, "
              f"{sum(1 for r in reports if not r.error and r.followed)} followed to the end")
        print("\ndeviations FreeKill let through, by kind: listed, and the codes that flagged them")
        for kind in sorted(listed_kind):
            flagged = ", ".join(f"{code} {n}" for code, n in per_kind[kind].most_common())
            print(f"  {kind:24} {listed_kind[kind]:5}   {flagged}")
        print(f"\nnot flagged: {len(missed)}")
        for game, dev, why in missed:
            print(f"  {game} seq {dev['seq']} {dev['kind']}: {dev['what']}: {why}")
        print(f"\nother violations: {len(others)}")
        for game, event, seq, code, message in others:
            print(f"  {game} event {event} (seq {seq}): {code}: {message}")
        for r in failed:
            print(f"\n{r.game}: cannot import: {r.error}")
    if failed:
        return 2
    return 1 if missed or others else 0


if __name__ == "__main__":
    raise SystemExit(main())
