"""`sgs-verify regress`: re-verify stored replays under this engine and report what changed
(service/regress.py does the work; docs/service.md, "Regression runs")."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clients.progress import ProgressBar

if TYPE_CHECKING:
    from sgsverify.v1 import service_pb2 as spb
    from storage.store import RunInfo

EXIT_UNCHANGED, EXIT_CHANGED, EXIT_FAILED = 0, 1, 2


def register(sub: Any) -> None:
    from clients.commands.service import _date, connection_options

    rg = sub.add_parser(
        "regress", help="re-verify stored replays under this engine and report what changed",
        description="Re-verify every stored replay (or those matching the filters, as for `list`) under this "
        "engine and compare with the stored verdict: per-event status and codes, the first event whose state "
        "digest differs, the result. Works on the database directly (--db), or on a server (--server). "
        "Exit status: 0 nothing changed, 1 something changed, 2 the run failed.")
    rg.add_argument("--db", metavar="URL", help="database URL ($SGS_VERIFY_DB; default: the embedded SQLite)")
    rg.add_argument("--data-dir", type=Path, help="folder of the embedded SQLite database")
    rg.add_argument("--server", metavar="ADDR", help="run it on this server instead (the Regress RPC; the "
                    "server's engine, its cores)")
    connection_options(rg)
    rg.add_argument("--run", dest="run_name", default="", metavar="NAME",
                    help="store the new verdicts as the named run (later runs can compare --against it); an "
                    "interrupted run resumes where it stopped when started again with the same name")
    rg.add_argument("--against", default="", metavar="RUN", help="compare with this named run's verdicts "
                    "(default: the verdicts made at submission)")
    rg.add_argument("--restart", action="store_true", help="forget the run's stored verdicts and start it again")
    rg.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: every core)")
    rg.add_argument("--scheduler", metavar="ADDRESS", help="spread the run over a Dask cluster "
                    "(tcp://host:8786); its workers read the database themselves")
    rg.add_argument("--engine", default="", metavar="MODULE:FACTORY", help=argparse.SUPPRESS)
    rg.add_argument("--chunk", type=int, default=None, help="replays per unit of work (default 16 on this "
                    "machine's workers, 64 on a Dask cluster)")
    rg.add_argument("--json", action="store_true", help="the report (with --list-runs: the runs) as one JSON document")
    rg.add_argument("--quiet", "-q", action="store_true", help="only the summary table")
    rg.add_argument("--list-runs", action="store_true", help="list the stored runs and exit (from the database, "
                    "or with --server from the server's: the ListRuns RPC, which needs the admin scope)")
    for name in ("tournament", "round", "table", "submitter"):
        rg.add_argument(f"--{name}", default="", help=f"only replays submitted with this {name} label")
    rg.add_argument("--player", default="", help="a player at any seat")
    rg.add_argument("--tenant", default="", help="only this tenant's replays (default: every tenant's)")
    which = rg.add_mutually_exclusive_group()
    which.add_argument("--violations", action="store_true", help="only replays with violations")
    which.add_argument("--clean", action="store_true", help="only replays without violations")
    rg.add_argument("--code", default="", help="only replays with a violation of this code")
    rg.add_argument("--since", type=_date, help="submitted at or after (ISO date or time, UTC)")
    rg.add_argument("--until", type=_date, help="submitted before (ISO date or time, UTC)")
    rg.set_defaults(run=run_regress)


def _filters(args: argparse.Namespace) -> Any:
    from storage.store import ReplayFilter

    return ReplayFilter(tournament=args.tournament, round=args.round, table=args.table, submitter=args.submitter,
                        player=args.player, violation_code=args.code,
                        has_violations=True if args.violations else False if args.clean else None,
                        submitted_after=args.since, submitted_before=args.until, tenant=args.tenant or None)


def report_lines(r: Any) -> list[str]:
    """A changed replay, for people."""
    lines = [f"{r.replay_id[:12]}: changed"]
    if r.error:
        lines.append(f"  error: {r.error}")
    for title, items in (("new violations", r.new_violations), ("vanished violations", r.vanished_violations)):
        if items:
            shown = ", ".join(f"{'header' if v.index < 0 else ('before ' if v.derived else '') + f'event {v.index}'} "
                              f"{v.code}" for v in items[:8])
            more = f" (+{len(items) - 8} more)" if len(items) > 8 else ""
            lines.append(f"  {title}: {shown}{more}")
    if r.status_changes:
        c = r.status_changes[0]
        where = f"{'derived before ' if c.derived else ''}event {c.index}"
        lines.append(f"  status changed at {len(r.status_changes)} annotation(s), first {where}: "
                     f"{c.stored or '(none)'} -> {c.new or '(none)'}")
    d = r.first_divergence
    if d is not None:
        lines.append(f"  first divergent event: {'derived before ' if d.derived else ''}{d.index} "
                     f"(stored digest {d.stored_digest[:16] or '-'}, now {d.new_digest[:16] or '-'})")
    else:
        # (A verdict can change while the game followed stays the same: recorded outcomes are adopted.)
        lines.append("  no divergent event: the game followed is the same, event by event")
    if r.winner_changed or r.stored_result != r.new_result:
        lines.append(f"  result: {r.stored_result} -> {r.new_result}")
    if r.scores_changed:
        lines.append(f"  scores: {list(r.stored_scores)} -> {list(r.new_scores)}")
    return lines


def summary_lines(s: dict[str, Any]) -> list[str]:
    rows = [("replays", s["replays"]), ("resumed (verified earlier)", s["resumed"]), ("verified now", s["verified"]),
            ("unchanged", s["unchanged"]), ("changed", s["changed"]),
            ("  with new violations", s["with_new_violations"]),
            ("  with vanished violations", s["with_vanished_violations"]),
            ("  with status changes", s["with_status_changes"]), ("  state diverged", s["diverged"]),
            ("  winner changed", s["winner_changed"]), ("failed to verify", s["failed"])]
    lines = [f"engine: {s['engine_version']}", *(f"{name:<28}{value:>8}" for name, value in rows)]
    if s["codes"]:
        lines.append(f"{'code':<28}{'new':>8}{'vanished':>10}")
        lines += [f"{code:<28}{c['new']:>8}{c['vanished']:>10}" for code, c in s["codes"].items()]
    seconds = s["seconds"]
    if s["verified"] and seconds > 0:
        lines.append(f"{s['verified']} replay(s) verified in {seconds:.1f}s ({s['verified'] / seconds:.1f}/s)")
    return lines


def run_lines(runs: Iterable[RunInfo]) -> list[str]:
    """The stored runs, one line each (--list-runs, on the database or a server)."""
    return [f"{info.name}: {info.replays} replay(s), {info.started:%Y-%m-%d %H:%M}–{info.finished:%H:%M} UTC, "
            f"{', '.join(info.engine_versions)}" for info in runs]


def print_runs(runs: Iterable[RunInfo], as_json: bool) -> None:
    """--list-runs: the table, or with --json one JSON document (a list, by name; times in ISO 8601, UTC)."""
    if as_json:
        print(json.dumps([{"name": r.name, "replays": r.replays, "engine_versions": list(r.engine_versions),
                           "started": r.started.isoformat(), "finished": r.finished.isoformat()} for r in runs],
                         indent=1, ensure_ascii=False))
        return
    for line in run_lines(runs):
        print(line)


def list_runs_remote(args: argparse.Namespace) -> int:
    from clients.client import ServiceError
    from clients.commands.service import _fail, connect

    try:
        with connect(args) as client:
            runs = client.list_runs()
    except (ServiceError, ValueError) as err:
        return _fail(err)
    print_runs([run_from(r) for r in runs], args.json)
    return EXIT_UNCHANGED


def run_from(r: spb.RunInfo) -> RunInfo:
    """A ListRuns answer's RunInfo (sgsverify.v1) as the store's RunInfo (service.convert.run_info's inverse)."""
    from datetime import UTC

    from storage.store import RunInfo

    return RunInfo(r.name, r.replays, tuple(r.engine_versions), r.started.ToDatetime(tzinfo=UTC),
                   r.finished.ToDatetime(tzinfo=UTC))


def run_remote(args: argparse.Namespace) -> int:
    from clients.client import ServiceError
    from clients.commands.service import _fail, connect, list_filter

    filters = list_filter(args)
    bar: ProgressBar | None = None
    changes: list[dict[str, Any]] = []
    summary: Any = None
    try:
        with connect(args) as client:
            for msg in client.regress(filters, run=args.run_name, against=args.against, restart=args.restart):
                kind = msg.WhichOneof("kind")
                if kind == "progress":
                    if bar is None:
                        bar = ProgressBar(msg.progress.total, "regress ")
                    bar.advance(msg.progress.done - bar.done)
                elif kind == "change":
                    from google.protobuf import json_format

                    changes.append(json_format.MessageToDict(msg.change, preserving_proto_field_name=True,
                                                 always_print_fields_with_no_presence=True))
                    if not args.json and not args.quiet:
                        if bar is not None:
                            bar.clear()
                        c = msg.change
                        print(f"{c.replay_id[:12]}: changed" + (f" ({c.error})" if c.error else ""))
                        for title, items in (("new", c.new_violations), ("vanished", c.vanished_violations)):
                            if items:
                                print(f"  {title} violations: " + ", ".join(f"event {v.index} {v.code}"
                                                                             for v in items[:8]))
                        if c.diverged:
                            print(f"  first divergent event: {c.first_divergent_index} (stored digest "
                                  f"{c.stored_digest.hex()[:16]}, now {c.new_digest.hex()[:16]})")
                        elif not c.error:
                            print("  no divergent event: the game followed is the same, event by event")
                        if c.winner_changed:
                            print(f"  result: {c.stored_result} -> {c.new_result}")
                else:
                    summary = msg.summary
    except (ServiceError, ValueError) as err:
        return _fail(err)
    except KeyboardInterrupt:
        print("interrupted" + (f"; run again with --run {args.run_name} to resume" if args.run_name else ""),
              file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
    if summary is None:
        return _fail(RuntimeError("the server ended the run without a summary"))
    if args.json:
        from google.protobuf import json_format

        print(json.dumps({"summary": json_format.MessageToDict(summary, preserving_proto_field_name=True,
                                                 always_print_fields_with_no_presence=True),
                          "changed": changes}, ensure_ascii=False, indent=1))
    else:
        print(f"engine: {summary.engine_version}\nreplays {summary.replays}, resumed {summary.resumed}, verified "
              f"{summary.verified}, unchanged {summary.unchanged}, changed {summary.changed}, failed {summary.failed}")
    if summary.failed:
        return EXIT_FAILED
    return EXIT_CHANGED if summary.changed else EXIT_UNCHANGED


def _saved(store: Any, run: str | None, size: int) -> str:
    """What an interrupted named run has kept, from the store (the progress bar counts the chunks reported, and
    the workers may have saved more since)."""
    if not run:
        return ""
    try:
        saved = len(store.run_ids(run))
    except Exception:  # (the database may be what went away: the message must still be printed)
        return ""
    return f": {saved}" + (f" of {size}" if size else "") + f" replay(s) saved in run {run!r}"


def run_regress(args: argparse.Namespace) -> int:
    if args.server and args.list_runs:
        return list_runs_remote(args)
    if args.server:
        return run_remote(args)
    from clients.commands.service import _fail, _service_config, _startup_failure
    from service.regress import LocalBackend, RegressError, RegressOptions, regress
    from storage.models import SUBMISSION_RUN
    from storage.store import Store

    try:
        store = Store.open(_service_config(args).database_url)
    except Exception as err:
        failure = _startup_failure(err)
        if failure is None:
            raise
        return _fail(failure)
    bar: ProgressBar | None = None
    base = 0
    size = 0

    def progress(done: int, total: int) -> None:
        nonlocal bar, base, size
        size = total
        if bar is None:
            base = done
            bar = ProgressBar(total - done, f"regress ({done} resumed) " if done else "regress ")
        bar.advance(done - base - bar.done)

    def show(report: Any) -> None:
        if report.changed and not args.json and not args.quiet:
            if bar is not None:
                bar.clear()
            print("\n".join(report_lines(report)), flush=True)

    try:
        if args.list_runs:
            print_runs(store.runs(), args.json)
            return EXIT_UNCHANGED
        options = RegressOptions(filters=_filters(args), run=args.run_name, against=args.against or SUBMISSION_RUN,
                                 engine=args.engine, restart=args.restart, chunk_size=args.chunk)
        if args.scheduler:
            from service.regress_dask import DaskBackend

            backend: Any = DaskBackend(args.scheduler)
        else:
            backend = LocalBackend(args.jobs)
        try:
            result = regress(store, options, backend, on_progress=progress, on_report=show)
        except KeyboardInterrupt:
            if bar is not None:
                bar.clear()
            resume = (f"; run `sgs-verify regress --run {args.run_name}` again to resume" if args.run_name
                      else " (give --run NAME to make a run resumable)")
            print(f"interrupted{_saved(store, args.run_name, size)}{resume}", file=sys.stderr)
            return 130
        finally:
            if bar is not None:
                bar.close()
    except RegressError as err:
        return _fail(err)
    except Exception as err:
        failure = _startup_failure(err)
        if failure is None:
            raise
        return _fail(failure)
    finally:
        store.close()
    summary = result.summary()
    if args.json:
        print(json.dumps({"summary": summary, "run": args.run_name, "against": args.against,
                          "changed": [r.to_json() for r in result.changed]}, ensure_ascii=False, indent=1))
    else:
        print("\n".join(summary_lines(summary)))
    if result.failed:
        return EXIT_FAILED
    return EXIT_CHANGED if result.changed else EXIT_UNCHANGED
