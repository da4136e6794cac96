"""The `sgs-verify` command line. Each group of commands lives in clients/commands/ and
registers itself through ``register(subparsers)``."""

from __future__ import annotations

# Before anything heavy: a Ctrl-C while the commands' modules (protobuf, the engine, gRPC) are still
# being imported ends the command with `interrupted`, exit status 130, and no import traceback. Only when
# this is the program (`sgs-verify`, `python -m clients.cli`): a program importing the module keeps its own.
import os
import signal
import sys

from clients import interrupts

if __name__ == "__main__" or os.path.basename(sys.argv[0] if sys.argv else "") == "sgs-verify":
    signal.signal(signal.SIGINT, interrupts.exit_now)

import argparse
import importlib
from collections.abc import Sequence

# Command modules, in the order their commands are listed in --help.
COMMAND_MODULES = ["clients.commands.offline", "clients.commands.imports", "clients.commands.cheats",
                   "clients.commands.service", "clients.commands.standings", "clients.commands.regress",
                   "clients.commands.access", "clients.commands.bridge"]


def version() -> str:
    """The version, with the fingerprint of the rules' sources (what a stored verdict records)."""
    from verifier import engine_version

    return engine_version()


class VersionAction(argparse.Action):
    """--version, computed only when asked (it imports the engine to fingerprint it)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version (and the engine's) and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sgs-verify", description="The Sanguosha rules oracle: verify game logs "
                                     "against a seeded rules engine.",
                                     epilog="`sgs-verify COMMAND --help` tells more of a command. Ctrl-C ends any "
                                     "command (exit status 130).")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def command_list(parser: argparse.ArgumentParser) -> str:
    """Every command with its one-line help: what a bare `sgs-verify` prints."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    width = max(len(choice.dest) for choice in sub._choices_actions)
    lines = [parser.format_usage().rstrip(), "", "commands:"]
    lines += [f"  {choice.dest:<{width}}  {choice.help}" for choice in sub._choices_actions]
    lines += ["", "`sgs-verify COMMAND --help` tells more of a command; `sgs-verify --help` the options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        # From here on a Ctrl-C unwinds, so that a command can stop cleanly and say what it had done.
        if signal.getsignal(signal.SIGINT) is interrupts.exit_now:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:  # usage errors (argparse has printed why): return, so callers in-process see 2
            return exit_.code if isinstance(exit_.code, int) else 2
        if args.command is None:
            print(command_list(parser))
            return 2
        code: int = args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return interrupts.EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
