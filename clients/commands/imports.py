"""`sgs-verify import ENGINE FILE... --out DIR`: other engines' records turned into our logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from clients.files import read_named_file
from clients.progress import ProgressBar
from importers import ENGINES, RecordError, importer_of_all
from verifier.logio import MAX_RECORD_BYTES, LogFormatError

EXIT_OK, EXIT_FAILED = 0, 2


def register(sub: Any) -> None:
    imp = sub.add_parser("import", help="convert other engines' game records into logs (FreeKill)",
                         description="Convert game records of another engine into sgs-verify logs, one log per "
                         "input named after it. FreeKill: server transcripts (JSON lines), client replays "
                         "(.fk.rep) and the client's database of replays (one log per recording, named as "
                         "FreeKill names it). Exit status 2 when a file cannot be imported (each says why; the others "
                         "are still written).")
    imp.add_argument("engine", choices=ENGINES, help="the engine whose records they are")
    imp.add_argument("files", nargs="+", type=Path, metavar="FILE", help="the records (FreeKill: server "
                     "transcripts, JSON lines of a room; client replays, .fk.rep; the client's SQLite database)")
    imp.add_argument("--out", type=Path, required=True, help="folder for the logs")
    imp.add_argument("--json", action="store_true", help="write the JSON mapping (.json) instead of binary (.pb)")
    imp.set_defaults(run=run_import)


def out_name(path: Path, as_json: bool) -> str:
    name = path.name
    for suffix in (".xz", ".gz"):
        name = name.removesuffix(suffix)
    for suffix in (".jsonl", ".fk.rep", ".rep", ".json", ".txt"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name + (".json" if as_json else ".pb")


def part_name(name: str, as_json: bool) -> str:
    """A file name for one record of a database, from its FreeKill name (which holds a player's
    screen name: anything but a plain name part is replaced)."""
    safe = "".join(c if c.isprintable() and c not in '/\\:*?"<>|' else "_" for c in name).lstrip(".") or "recording"
    return safe[:200] + (".json" if as_json else ".pb")


def run_import(args: argparse.Namespace) -> int:
    convert = importer_of_all(args.engine)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"{args.out}: cannot create the folder: {err.strerror}", file=sys.stderr)
        return EXIT_FAILED
    failed = imported = 0
    bar = ProgressBar(len(args.files), "importing ")
    for path in args.files:
        try:
            records = convert(read_named_file(path, MAX_RECORD_BYTES), path.name)
        except OSError as err:
            records = []
            failed += 1
            bar.clear()
            print(f"{path}: cannot import: {err.strerror}", file=sys.stderr)
        except (RecordError, LogFormatError) as err:
            records = []
            failed += 1
            bar.clear()
            print(f"{path}: cannot import: {err}", file=sys.stderr)
        for record in records:
            where = f"{path} [{record.name}]" if record.part else str(path)
            bar.clear()
            if record.log is None:
                failed += 1
                print(f"{where}: cannot import: {record.error}", file=sys.stderr)
                continue
            log = record.log
            target = args.out / (part_name(record.name, args.json) if record.part else out_name(path, args.json))
            try:
                if args.json:
                    target.write_text(json_format.MessageToJson(log, indent=1, ensure_ascii=False), encoding="utf-8")
                else:
                    target.write_bytes(log.SerializeToString(deterministic=True))
            except OSError as err:
                failed += 1
                print(f"{where}: cannot import: {target}: {err.strerror}", file=sys.stderr)
                continue
            imported += 1
            print(f"{where} -> {target}: {len(log.events)} events, {len(log.header.seats)} seats")
        bar.advance()
    bar.close()
    print(f"imported {imported} of {imported + failed} record(s) from {len(args.files)} file(s) into {args.out}")
    return EXIT_FAILED if failed else EXIT_OK
