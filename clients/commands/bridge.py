"""`sgs-verify bridge`: a FreeKill server's rooms verified while they are played (docs/freekill-bridge.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from clients.bridge import DEFAULT_MAX_ROOMS
from clients.commands.options import positive_int, positive_seconds
from clients.commands.service import _server_option


def _address(text: str) -> str:
    _host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return text


def register(sub: Any) -> None:
    p = sub.add_parser("bridge", help="follow a FreeKill server's log and verify each room live",
                       description="Follow a FreeKill server's log (across rotation, as tail -F), read the sgs-verify "
                       "tap's records (integrations/freekill/tap), convert each room as it is played and stream it "
                       "to the service (VerifyLive). Each violation is printed as it is found. Resumes from --state "
                       "after a restart. Runs until stopped (SIGTERM or Ctrl-C).")
    p.add_argument("--log", type=Path, required=True, help="the FreeKill server's log file (freekill.log)")
    p.add_argument("--state", type=Path, required=True, metavar="DIR",
                   help="the bridge's state directory (follow position, each open room's spool); made if missing")
    _server_option(p)
    p.add_argument("--room-timeout", type=positive_seconds, default=600.0, metavar="SECONDS",
                   help="end a room silent this long: its game is stored unfinished (default 600)")
    p.add_argument("--gap-wait", type=positive_seconds, default=10.0, metavar="SECONDS",
                   help="how long a room's missing record is waited for before the room is given up (default 10)")
    p.add_argument("--rotate-grace", type=positive_seconds, default=10.0, metavar="SECONDS",
                   help="read a rotated-away log until it has been quiet this long (default 10)")
    p.add_argument("--poll", type=positive_seconds, default=0.2, metavar="SECONDS",
                   help="log poll interval (default 0.2)")
    p.add_argument("--json", action="store_true", help="JSON lines on stdout instead of text")
    p.add_argument("--metrics", type=_address, metavar="HOST:PORT", help="serve Prometheus metrics here")
    p.add_argument("--tournament", default="freekill", help="the tournament label stored with each room's replay "
                   "(default freekill; the table is 'room N', the round 'game K')")
    p.add_argument("--submitter", default="sgs-verify bridge", help="stored with each replay")
    p.add_argument("--max-rooms", type=positive_int, default=DEFAULT_MAX_ROOMS, metavar="N",
                   help="rooms followed at once; a room opened beyond them is reported (uncheckable) and not "
                   f"followed (default {DEFAULT_MAX_ROOMS})")
    p.add_argument("--retry-max", type=positive_int, default=30, metavar="SECONDS",
                   help="the longest wait between attempts to reach the service (default 30)")
    p.set_defaults(run=run_bridge)


def run_bridge(args: argparse.Namespace) -> int:
    from clients.bridge.bridge import Bridge, BridgeMetrics, Output, Settings
    from clients.bridge.live import Connection
    from clients.bridge.state import StateError

    settings = Settings(log=args.log, state=args.state, room_timeout=args.room_timeout, gap_wait=args.gap_wait,
                        rotate_grace=args.rotate_grace, poll=args.poll, tournament=args.tournament,
                        submitter=args.submitter, as_json=args.json, retry_max=float(args.retry_max),
                        max_rooms=args.max_rooms)
    try:
        connection = Connection.make(args.server, token=args.token, tls=args.tls, tls_ca=args.tls_ca,
                                     client_cert=args.client_cert, client_key=args.client_key)
    except ValueError as err:
        print(f"sgs-verify: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"sgs-verify: cannot read {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    metrics = BridgeMetrics()
    if args.metrics:
        try:
            metrics.serve(args.metrics)
        except OSError as err:
            print(f"sgs-verify: cannot serve metrics on {args.metrics}: {err.strerror}", file=sys.stderr)
            return 2
    try:
        bridge = Bridge(settings, connection, Output(args.json), metrics)
        bridge.start()
    except (StateError, OSError, ValueError) as err:
        print(f"sgs-verify: cannot start: {err}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: bridge.stop())
    print(f"sgs-verify: following {args.log}", file=sys.stderr, flush=True)
    try:
        bridge.run()
    except StateError as err:
        print(f"sgs-verify: stopped: {err}", file=sys.stderr, flush=True)
        return 2
    print("sgs-verify: stopped", file=sys.stderr, flush=True)
    return 0


__all__ = ["register"]
