"""The `sgs-verify` command line. Each group of commands lives in clients/commands/ and
registers itself through ``register(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Command modules, in the order their commands are listed in --help.
COMMAND_MODULES = ["clients.commands.offline", "clients.commands.imports", "clients.commands.cheats",
                   "clients.commands.service", "clients.commands.standings", "clients.commands.regress",
                   "clients.commands.access", "clients.commands.bridge"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sgs-verify", description="The Sanguosha rules oracle: verify game logs "
                                     "against a seeded rules engine.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # usage errors (argparse has printed why): return, so callers in-process see 2
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
