"""Service commands: `serve`, `db upgrade`, and the client commands `submit`, `show`, `list`,
`live`, `delete` (all of which take --server ADDR, default $SGS_VERIFY_SERVER or 127.0.0.1:50051)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from clients.client import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_IN_FLIGHT,
    ListFilter,
    Metadata,
    ServiceError,
    ServiceUnavailable,
    Submission,
    VerifierClient,
    default_server,
    retrying,
)
from clients.commands.records import format_hint
from clients.files import (
    LOG_SUFFIXES,
    RECORD_SUFFIXES,
    expand_folders,
    not_regular,
    read_named_file,
)
from clients.interrupts import EXIT_INTERRUPTED, deferred
from clients.progress import ProgressBar
from importers import ENGINES
from importers.freekill import sniff, unambiguous
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_FAILED = 0, 1, 2

STATUS_MARK = {apb.STATUS_OK: "ok", apb.STATUS_ILLEGAL: "ILLEGAL", apb.STATUS_MISMATCH: "MISMATCH",
               apb.STATUS_MALFORMED: "MALFORMED", apb.STATUS_DERIVED: "derived", apb.STATUS_NOT_CHECKED: "not checked"}
# `list --source`: who made the decision a violation is about (sgsverify.v1.DecisionSource).
SOURCE_CHOICES = {"client": pb.DECISION_SOURCE_CLIENT, "ai": pb.DECISION_SOURCE_AI,
                  "default": pb.DECISION_SOURCE_DEFAULT}


def register(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run the gRPC verification service",
                           description="Run the verification service. With no options it listens on 127.0.0.1:50051 "
                           "and stores replays in an embedded SQLite file (see docs/service.md); every option "
                           "also has an environment variable.")
    serve.add_argument("--address", help="host:port to listen on ($SGS_VERIFY_ADDRESS; default 127.0.0.1:50051; "
                       "port 0 picks a free one)")
    serve.add_argument("--db", metavar="URL", help="database URL, e.g. postgresql+psycopg://user@host/db "
                       "($SGS_VERIFY_DB; default: SQLite in the data folder)")
    serve.add_argument("--data-dir", type=Path, help="folder of the embedded SQLite database ($SGS_VERIFY_DATA; "
                       "default $XDG_DATA_HOME/sgs-verify or ~/.local/share/sgs-verify)")
    serve.add_argument("--workers", type=int, help="verification worker processes ($SGS_VERIFY_WORKERS; "
                       "default: the number of cores)")
    serve.add_argument("--pin-workers", action=argparse.BooleanOptionalAction, default=None,
                       help="with a worker for every CPU (the default count), run each worker process on a "
                       "CPU of its own, in turn (default; --no-pin-workers or $SGS_VERIFY_PIN_WORKERS=0 leaves it "
                       "to the OS)")
    serve.add_argument("--max-events", type=int, help="most events in one game ($SGS_VERIFY_MAX_EVENTS; default "
                       "100000)")
    serve.add_argument("--max-message-bytes", type=int, help="largest request message "
                       "($SGS_VERIFY_MAX_MESSAGE_BYTES; default 16 MiB)")
    serve.add_argument("--max-stream-messages", type=int, help="most messages in one client stream "
                       "($SGS_VERIFY_MAX_STREAM_MESSAGES; default 10000)")
    serve.add_argument("--max-record-bytes", type=int, help="largest record of another engine taken (submit "
                       "--from; $SGS_VERIFY_MAX_RECORD_BYTES; default 64 MiB)")
    serve.add_argument("--deadline", type=float, help="longest verification, in seconds ($SGS_VERIFY_DEADLINE; "
                       "default 60)")
    serve.add_argument("--grace", type=float, help="seconds in-flight requests get to finish on SIGTERM "
                       "($SGS_VERIFY_GRACE; default 30)")
    serve.add_argument("--migrate", action=argparse.BooleanOptionalAction, default=None,
                       help="apply schema migrations at start (default: for SQLite only; for PostgreSQL run "
                       "`sgs-verify db upgrade`)")
    serve.add_argument("--http", metavar="HOST:PORT", help="also serve the annotated replay viewer and its JSON API "
                       "over HTTP there, e.g. 127.0.0.1:8080 ($SGS_VERIFY_HTTP; needs the web extra; see "
                       "docs/viewer.md)")
    serve.add_argument("--http-host", action="append", metavar="NAME", help="a host name the viewer answers to "
                       "besides loopback names and --http's host (repeatable; $SGS_VERIFY_HTTP_HOSTS, "
                       "comma-separated): the name a proxy or browser uses for it (docs/security.md#viewer)")
    serve.add_argument("--max-concurrent", type=int, help="RPCs in progress at once, over every tenant "
                       "($SGS_VERIFY_MAX_CONCURRENT; default 256)")
    serve.add_argument("--rate-limit", type=float, help="each tenant's requests per second, 0 for none "
                       "($SGS_VERIFY_RATE_LIMIT; default 100)")
    serve.add_argument("--rate-burst", type=int, help="requests a tenant may make at once above its rate "
                       "($SGS_VERIFY_RATE_BURST; default 200)")
    serve.add_argument("--max-streams-per-tenant", type=int, help="upload and live streams one tenant may have open "
                       "($SGS_VERIFY_MAX_STREAMS_PER_TENANT; default 32)")
    serve.add_argument("--stream-idle-timeout", type=float, metavar="SECONDS", help="end a client stream that sends "
                       "nothing for this long ($SGS_VERIFY_STREAM_IDLE_TIMEOUT; default 300)")
    serve.add_argument("--max-buffered-bytes", type=int, help="request bytes held at once over every request; a "
                       "request that does not fit waits, then is refused unread ($SGS_VERIFY_MAX_BUFFERED_BYTES; "
                       "default 64 MiB; one tenant holds at most half of it)")
    serve.add_argument("--first-message-timeout", type=float, metavar="SECONDS", help="end an RPC whose first "
                       "request message has not come this long after the call "
                       "($SGS_VERIFY_FIRST_MESSAGE_TIMEOUT; default 10)")
    serve.add_argument("--tls-cert", type=Path, metavar="PEM", help="serve TLS with this certificate chain "
                       "($SGS_VERIFY_TLS_CERT; with --tls-key)")
    serve.add_argument("--tls-key", type=Path, metavar="PEM",
                       help="the certificate's private key ($SGS_VERIFY_TLS_KEY)")
    serve.add_argument("--tls-client-ca", type=Path, metavar="PEM", help="require client certificates signed by this "
                       "CA ($SGS_VERIFY_TLS_CLIENT_CA)")
    serve.add_argument("--insecure", action="store_true", help="serve an address other than loopback without TLS or "
                       "without tokens (docs/security.md)")
    serve.add_argument("--metrics", metavar="HOST:PORT", help="serve Prometheus metrics there, e.g. 127.0.0.1:9464 "
                       "($SGS_VERIFY_METRICS)")
    serve.add_argument("--examples", action="store_true", help="when the store is empty, store a few example games "
                       "(the documented examples and self-play games, two with a cheat) under the tournament "
                       "'examples' (make run does)")
    serve.set_defaults(run=run_serve)

    db = sub.add_parser("db", help="database maintenance (schema migrations)",
                        description="Database maintenance: apply the schema migrations, or show the revision.")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = db_sub.add_parser("upgrade", help="migrate the database to this version's schema (safe to run "
                           "from several replicas at once)",
                           description="Migrate the database to this version's schema (safe to run from several "
                           "replicas at once).")
    up.add_argument("--db", metavar="URL", help="database URL ($SGS_VERIFY_DB; default: the embedded SQLite)")
    up.add_argument("--data-dir", type=Path, help="folder of the embedded SQLite database")
    up.add_argument("--revision", default="head", help="target revision (default: head)")
    up.set_defaults(run=run_db_upgrade)
    cur = db_sub.add_parser("current", help="show the database's schema revision",
                            description="Show the database's schema revision.")
    cur.add_argument("--db", metavar="URL", help="database URL ($SGS_VERIFY_DB; default: the embedded SQLite)")
    cur.add_argument("--data-dir", type=Path, help="folder of the embedded SQLite database")
    cur.set_defaults(run=run_db_current)

    submit = sub.add_parser("submit", help="verify log files on a server and store their replays",
                            description="Submit game logs (binary or JSON) for verification. Exit status: 0 all "
                            "clean, 1 violations found, 2 a file could not be submitted.")
    submit.add_argument("files", nargs="+", type=Path, metavar="FILE", help="log files (binary protobuf or JSON) or "
                        "FreeKill records, or folders of them (every .pb and .json under it; with --from freekill, "
                        "the records)")
    _server_option(submit)
    submit.add_argument("--tournament", default="", help="tournament or event label")
    submit.add_argument("--round", default="", help="round label (stored with the replay, filterable)")
    submit.add_argument("--table", default="", help="table label")
    submit.add_argument("--submitter", default="", help="who or what submits the logs (an account, a game server)")
    submit.add_argument("--stream", action="store_true", help="upload each log as a stream of event batches")
    submit.add_argument("--from", dest="source", choices=["auto", "sgs-verify", *ENGINES], default="auto",
                        help="what the files are: auto (default: our logs, and FreeKill transcripts or .fk.rep told "
                        "by their content), sgs-verify (our logs only) or freekill; another engine's records are "
                        "imported by the server and the converted log is stored")
    submit.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="events per message with --stream")
    submit.add_argument("--jobs", "-j", type=int, default=DEFAULT_IN_FLIGHT,
                        help=f"files submitted at once (default {DEFAULT_IN_FLIGHT}, as verify_many sends them)")
    submit.add_argument("--quiet", "-q", action="store_true", help="only the summary line")
    submit.add_argument("--json", action="store_true", help="one JSON object per file on stdout (the summary on "
                        "stderr), every field said, `created: false` for a log the server had already")
    submit.set_defaults(run=run_submit)

    show = sub.add_parser("show", help="show a stored annotated replay",
                          description="Show a stored annotated replay: its header facts, then every event with its "
                          "verdict (status, violation codes and messages).")
    show.add_argument("id", help="replay id, or a unique prefix of at least 8 hex digits")
    _server_option(show)
    show.add_argument("--violations", action="store_true", help="only events with violations")
    show.add_argument("--json", action="store_true", help="the replay as JSON")
    show.add_argument("--run", dest="run_name", default="", metavar="NAME", help="the verdict of this regression run "
                      "(sgs-verify regress --run NAME) instead of the submission's")
    show.set_defaults(run=run_show)

    ls = sub.add_parser("list", help="list stored replays (newest first)",
                        description="List stored replays, newest first: id, submission time, tournament, events, "
                        "violations and their codes, and every seat's player. The filters combine with AND.")
    _server_option(ls)
    ls.add_argument("--tournament", default="", help="only replays submitted with this tournament label")
    ls.add_argument("--round", default="", help="only this round label")
    ls.add_argument("--table", default="", help="only this table label")
    ls.add_argument("--submitter", default="", help="only replays from this submitter")
    ls.add_argument("--player", default="", help="a player at any seat")
    ls.add_argument("--tenant", default="", help="only this tenant's replays (an admin token sees every tenant's "
                    "otherwise; any other token only its own)")
    which = ls.add_mutually_exclusive_group()
    which.add_argument("--violations", action="store_true", help="only replays with violations")
    which.add_argument("--clean", action="store_true", help="only replays without violations")
    ls.add_argument("--code", default="", help="only replays with a violation of this code, e.g. SLASH_LIMIT (any "
                    "case; a code not in the catalogue, docs/codes.md, is refused)")
    ls.add_argument("--source", dest="violation_source", choices=sorted(SOURCE_CHOICES), default="",
                    help="only replays with a violation on a decision made by the player's client, an AI standing in, "
                    "or the default on a timeout (logs that say who decided: the FreeKill bridge's); with --code, "
                    "a violation of that code on such a decision")
    ls.add_argument("--judged-by", choices=("engine", "server"), default="",
                    help="engine: only games this engine replayed; server: only records it did not replay (a FreeKill "
                    "room of generals, cards or rules it does not have), stored with their server's own verdicts")
    ls.add_argument("--since", type=_date, help="submitted at or after (ISO date or time, UTC)")
    ls.add_argument("--until", type=_date, help="submitted before (ISO date or time, UTC)")
    ls.add_argument("--limit", type=int, default=50, help="at most this many (default 50; 0 for all)")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    ls.set_defaults(run=run_list)

    live = sub.add_parser("live", help="stream a log as a live game and print verdicts as they arrive",
                          description="Send a log to the server as a live game (VerifyLive): its events in batches, "
                          "optionally paced, printing each verdict as it arrives; when the stream ends the replay is "
                          "stored (unless --discard). Exit status: 0 clean, 1 violations, 2 failed.")
    live.add_argument("file", type=Path, metavar="FILE", help="the log (binary protobuf or JSON)")
    _server_option(live)
    live.add_argument("--batch-size", type=int, default=16, help="events per message (default 16)")
    live.add_argument("--delay", type=float, default=0.0, help="seconds to wait between batches (pace of a game)")
    live.add_argument("--discard", action="store_true", help="do not store the replay")
    live.add_argument("--tournament", default="", help="tournament or event label (stored with the replay)")
    live.add_argument("--submitter", default="", help="who or what streams the game")
    live.set_defaults(run=run_live)

    delete = sub.add_parser("delete", help="delete a stored replay",
                            description="Delete a stored replay, its log and its verdicts (written to the audit "
                            "log).")
    delete.add_argument("id", help="replay id, or a unique prefix of at least 8 hex digits")
    _server_option(delete)
    delete.set_defaults(run=run_delete)


def _server_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=None, metavar="ADDR",
                        help="host:port of the service ($SGS_VERIFY_SERVER; default 127.0.0.1:50051)")
    connection_options(parser)


def connection_options(parser: argparse.ArgumentParser) -> None:
    """How a client command reaches a server that needs a token or TLS (docs/security.md)."""
    parser.add_argument("--token", default=None, help="the bearer token ($SGS_VERIFY_TOKEN, which keeps it out of "
                        "the process list; sgs-verify token create makes one)")
    parser.add_argument("--tls", action="store_true", default=None, help="connect with TLS ($SGS_VERIFY_TLS=1; "
                        "implied by --tls-ca and --client-cert)")
    parser.add_argument("--tls-ca", type=Path, metavar="PEM", help="the CA that signed the server's certificate "
                        "($SGS_VERIFY_TLS_CA; default: the system's)")
    parser.add_argument("--client-cert", type=Path, metavar="PEM", help="a client certificate, for a server that "
                        "requires one ($SGS_VERIFY_CLIENT_CERT; with --client-key)")
    parser.add_argument("--client-key", type=Path, metavar="PEM", help="its private key ($SGS_VERIFY_CLIENT_KEY)")


def connect(args: argparse.Namespace) -> VerifierClient:
    """A client for the command's --server and connection options (ValueError for unusable ones)."""
    try:
        return VerifierClient(args.server, token=args.token, tls=args.tls, tls_ca=args.tls_ca,
                              client_cert=args.client_cert, client_key=args.client_key)
    except OSError as err:
        raise ValueError(f"cannot read {err.filename}: {err.strerror}") from None


def _date(value: str) -> datetime:
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or time: {value!r}") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


# Said after a service that does not answer: the usual cause on a newcomer's machine.
UNREACHABLE_HINT = ("is the service running? `make run` starts one here; --server or $SGS_VERIFY_SERVER names "
                    "another")


def _fail(err: Exception) -> int:
    hint = f" ({UNREACHABLE_HINT})" if isinstance(err, ServiceUnavailable) else ""
    print(f"sgs-verify: {err}{hint}", file=sys.stderr)
    return EXIT_FAILED


# ---------------------------------------------------------------------------------------- serve / db

def _service_config(args: argparse.Namespace) -> Any:
    from dataclasses import replace

    from service.config import ServiceConfig

    config = ServiceConfig.from_env()
    limits = config.limits
    limit_changes = {name: value for name, value in (
        ("max_events_per_game", getattr(args, "max_events", None)),
        ("max_message_bytes", getattr(args, "max_message_bytes", None)),
        ("max_stream_messages", getattr(args, "max_stream_messages", None)),
        ("deadline_seconds", getattr(args, "deadline", None)),
        ("max_record_bytes", getattr(args, "max_record_bytes", None)),
        ("max_concurrent_rpcs", getattr(args, "max_concurrent", None)),
        ("rate_limit", getattr(args, "rate_limit", None)), ("rate_burst", getattr(args, "rate_burst", None)),
        ("max_streams_per_tenant", getattr(args, "max_streams_per_tenant", None)),
        ("stream_idle_seconds", getattr(args, "stream_idle_timeout", None)),
        ("max_buffered_bytes", getattr(args, "max_buffered_bytes", None)),
        ("first_message_seconds", getattr(args, "first_message_timeout", None))) if value is not None}
    changes: dict[str, Any] = {name: value for name, value in (
        ("address", getattr(args, "address", None)), ("db_url", getattr(args, "db", None)),
        ("data_dir", getattr(args, "data_dir", None)), ("workers", getattr(args, "workers", None)),
        ("pin_workers", getattr(args, "pin_workers", None)), ("grace_seconds", getattr(args, "grace", None)),
        ("migrate", getattr(args, "migrate", None)),
        ("http_address", getattr(args, "http", None)), ("tls_cert", getattr(args, "tls_cert", None)),
        ("tls_key", getattr(args, "tls_key", None)), ("tls_client_ca", getattr(args, "tls_client_ca", None)),
        ("metrics_address", getattr(args, "metrics", None)),
        ("http_hosts", tuple(args.http_host) if getattr(args, "http_host", None) else None))
        if value is not None}
    if getattr(args, "insecure", False):
        changes["insecure"] = True
    if limit_changes:
        changes["limits"] = replace(limits, **limit_changes)
    return replace(config, **changes)


def _startup_failure(err: Exception) -> Exception | None:
    """A plain message for what can go wrong opening the database; None for anything else."""
    from sqlalchemy.exc import SQLAlchemyError

    from service.config import ConfigError
    from service.server import ServerStartError
    from storage.database import UnsupportedDatabaseURL
    from storage.store import StorageError

    if isinstance(err, ConfigError | ServerStartError | StorageError | UnsupportedDatabaseURL):
        return err
    if isinstance(err, SQLAlchemyError):
        return RuntimeError(f"cannot use the database: {str(err).splitlines()[0]}")
    if isinstance(err, OSError):  # e.g. the data folder cannot be created
        return RuntimeError(f"{err.strerror}: {err.filename}" if err.filename else str(err))
    return None


def configure_logging() -> None:
    """The server's log on stderr, each line with the request it is about (docs/security.md), unless the
    embedding program has set logging up itself."""
    import logging

    from service.guard import RequestIdFilter

    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [request %(request_id)s] %(message)s"))
    handler.addFilter(RequestIdFilter())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("sgs-verify").setLevel(logging.INFO)  # the service's own (the audit log among them)


def run_serve(args: argparse.Namespace) -> int:
    from service.server import serve

    configure_logging()
    try:
        config = _service_config(args)
        config.check()
        asyncio.run(serve(config, started=_store_examples if args.examples else None))
    except Exception as err:
        failure = _startup_failure(err)
        if failure is None:
            raise
        return _fail(failure)
    return 0


async def _store_examples(server: Any) -> None:
    """serve --examples: the example games (clients/commands/examples.py), stored through the service's own
    submission path, when the store holds nothing yet."""
    from clients.commands.examples import TOURNAMENT, examples
    from storage.store import SubmissionMetadata

    store, servicer = server.store, server.servicer
    held = await asyncio.to_thread(store.count)
    if held > 0:
        # Said, not silent: a store shared with another checkout (the per-user default) is seldom empty.
        print(f"sgs-verify: --examples stored nothing: examples go only into an empty store, and this one holds "
              f"{held} replay(s) (--data-dir EMPTY_FOLDER for a store of their own)")
        return
    made = await asyncio.to_thread(lambda: list(examples()))
    for example in made:
        await servicer.submit_encoded(example.data, SubmissionMetadata(tournament=TOURNAMENT, table=example.table,
                                                                       submitter="sgs-verify serve --examples"),
                                      where=f"the example {example.name}")
    print(f"sgs-verify: the store was empty: stored {len(made)} example games (tournament '{TOURNAMENT}')")


def run_db_upgrade(args: argparse.Namespace) -> int:
    from storage import migrate
    from storage.database import create_database_engine

    try:
        engine = create_database_engine(_service_config(args).database_url)
        try:
            before = migrate.current_revision(engine)
            migrate.upgrade(engine, args.revision)
            after = migrate.current_revision(engine)
        finally:
            engine.dispose()
    except Exception as err:
        failure = _startup_failure(err)
        if failure is None:
            raise
        return _fail(failure)
    where = engine.url.render_as_string()
    if before == after:
        print(f"{where}: already at revision {after}")
    else:
        print(f"{where}: migrated from {before or '(empty)'} to {after}")
    return 0


def run_db_current(args: argparse.Namespace) -> int:
    from storage import migrate
    from storage.database import create_database_engine

    try:
        engine = create_database_engine(_service_config(args).database_url)
        try:
            current, head = migrate.current_revision(engine), migrate.head_revision()
        finally:
            engine.dispose()
    except Exception as err:
        failure = _startup_failure(err)
        if failure is None:
            raise
        return _fail(failure)
    print(f"{engine.url.render_as_string()}: revision {current or '(empty)'}; this version's head is {head}")
    return 0 if current == head else 1


# ---------------------------------------------------------------------------------------- submit

def _metadata(args: argparse.Namespace) -> Metadata:
    return Metadata(tournament=args.tournament, round=getattr(args, "round", ""), table=getattr(args, "table", ""),
                    submitter=args.submitter)


def _submit_one(client: VerifierClient, path: Path, args: argparse.Namespace) -> Submission:
    from verifier.logio import MAX_LOG_BYTES, MAX_RECORD_BYTES, LogFormatError, load_log

    meta = _metadata(args)
    source = args.source
    data = read_named_file(path, max(MAX_LOG_BYTES, MAX_RECORD_BYTES) if source == "auto" else
                           MAX_LOG_BYTES if source == "sgs-verify" else MAX_RECORD_BYTES)
    if source == "auto":
        # Told by content (clients/commands/records.py); a .fk.rep could be taken for a binary log, so it is one only
        # when it does not load as a log.
        source = "sgs-verify"
        if unambiguous(data):
            source = "freekill"
        else:
            try:
                load_log(data)
            except LogFormatError:
                if sniff(data) is not None:
                    source = "freekill"
        if source == "sgs-verify" and len(data) > MAX_LOG_BYTES:
            read_named_file(path, MAX_LOG_BYTES)  # raises the usual "larger than" error
    if source != "sgs-verify":
        return client.submit_record(source, data, path.name, meta, summary_only=True)
    if args.stream:
        return client.upload(load_log(data), meta, batch_size=args.batch_size, summary_only=True)
    return client.verify(data, meta, summary_only=True)


@dataclass(slots=True)
class SubmitTally:
    """What `submit` did with its files, for the summary."""

    stored: int = 0
    already: int = 0  # the server had the log already (the same bytes): nothing new stored
    failed: int = 0
    not_sent: int = 0  # left unsent by Ctrl-C
    events: int = 0
    violations: int = 0
    with_violations: int = 0

    def summary(self, total: int, address: str, seconds: float, files: int | None = None) -> str:
        """``total`` submissions; ``files`` the files they came from, when a file held several (a database)."""
        done = self.stored + self.already
        parts = [f"{self.stored} stored", f"{self.already} already stored"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.not_sent:
            parts.append(f"{self.not_sent} not sent (interrupted)")
        count = f"{total} file(s)" if files is None or files == total else f"{total} record(s) of {files} file(s)"
        return (f"submitted {done} of {count} to {address} in {seconds:.1f} s ({', '.join(parts)}): "
                f"{self.events} events, {self.violations} violation(s) in {self.with_violations} game(s)")


def _refused(err: Exception) -> Submission:
    raise err


Job = tuple[Path, str, Callable[[], Submission]]


def _submissions(client: VerifierClient, files: list[Path], args: argparse.Namespace) -> list[Job]:
    """What to submit, each with its file and its name for the report: a file, or each recording of a
    FreeKill client database (the server takes one record per submission; the database is split here)."""
    from verifier import LogFormatError
    from verifier.logio import MAX_RECORD_BYTES

    jobs: list[Job] = []
    for path in files:
        if args.source in ("freekill", "auto") and _is_sqlite(path):
            from importers.freekill import ImportFailure
            from importers.freekill.api import database_recordings

            try:
                recordings = database_recordings(read_named_file(path, MAX_RECORD_BYTES))
            except (OSError, LogFormatError, ImportFailure) as err:
                failure = LogFormatError(str(err)) if isinstance(err, ImportFailure) else err
                jobs.append((path, str(path), functools.partial(_refused, failure)))
                continue
            for number, recording in enumerate(recordings, 1):
                label = f"recording {number}"
                if isinstance(recording, ImportFailure):
                    bad = LogFormatError(f"{label} of the database: {recording}")
                    jobs.append((path, f"{path} [{label}]", functools.partial(_refused, bad)))
                    continue
                jobs.append((path, f"{path} [{label}]", functools.partial(
                    client.submit_record, "freekill", recording, f"{path.name}: {label}", _metadata(args),
                    summary_only=True)))
            continue
        jobs.append((path, str(path), functools.partial(_submit_one, client, path, args)))
    return jobs


def _is_sqlite(path: Path) -> bool:
    from importers.freekill.api import SQLITE_MAGIC

    if not_regular(path) is not None:
        return False  # said when the file is submitted (not opened: a FIFO would wait for a writer)
    try:
        with path.open("rb") as file:
            return file.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False  # said when the file is submitted


def run_submit(args: argparse.Namespace) -> int:
    from verifier import LogFormatError

    tally = SubmitTally()
    started = time.perf_counter()
    files, empty = expand_folders(args.files, LOG_SUFFIXES if args.source == "sgs-verify" else
                                  RECORD_SUFFIXES if args.source in ENGINES else LOG_SUFFIXES + RECORD_SUFFIXES)
    for folder, why in empty:
        print(f"{folder}: not submitted: {why}", file=sys.stderr)
    tally.failed += len(empty)
    try:
        client = connect(args)
    except ValueError as err:
        return _fail(err)
    if any(not_regular(path) is None for path in files):  # (a FIFO alone is refused here, no server needed)
        try:
            # (one line for a service that is not there, not one raw gRPC error for each file)
            client.wait_ready(timeout=5.0)
        except ServiceUnavailable as err:
            client.close()
            return _fail(err)
    jobs = _submissions(client, files, args)
    bar = ProgressBar(len(jobs), "submitting ") if len(jobs) > 1 else None

    def record(path: Path, label: str, future: Future[Submission]) -> None:
        try:
            sub = future.result()
        except (OSError, LogFormatError, ServiceError) as err:
            tally.failed += 1
            msg = (err.strerror or str(err)) if isinstance(err, OSError) else str(err)
            if bar:
                bar.clear()
            msg += format_hint(path, args.source, err)
            print(f"{label}: not submitted: {msg}", file=sys.stderr)
            if args.json:
                print(json.dumps({"file": label, "submitted": False, "error": msg}, ensure_ascii=False))
        else:
            info = sub.info
            tally.events += info.event_count
            tally.violations += info.violation_count
            tally.with_violations += info.violation_count > 0
            if sub.created:
                tally.stored += 1
            else:
                tally.already += 1
            if args.json:
                if bar:
                    bar.clear()
                print(json.dumps({"file": label, "submitted": True, "created": sub.created,
                                  "info": json_format.MessageToDict(info, preserving_proto_field_name=True,
                                                                    always_print_fields_with_no_presence=True)},
                                 ensure_ascii=False))
            elif not args.quiet:
                if bar:
                    bar.clear()
                state = "stored" if sub.created else "already stored"
                codes = f" ({', '.join(info.violation_codes)})" if info.violation_codes else ""
                print(f"{label}: {info.id[:12]} {state}, {info.event_count} events, "
                      f"{info.violation_count} violation(s){codes}")
        if bar:
            bar.advance()

    interrupted = False
    with client:
        pool = ThreadPoolExecutor(max(1, args.jobs))
        # (A file the server refuses for a while, its rate limit say, is sent again when it says: `retrying`.)
        stop = threading.Event()
        futures = [(path, label, pool.submit(retrying, job, stop=stop)) for path, label, job in jobs]
        done = 0
        try:
            for path, label, future in futures:
                # Ctrl-C may stop the wait for a file's answer, but not its tally: a Ctrl-C between the tally
                # and `done` moving on (the test's, just after the first "stored" line) had the in-flight loop
                # below count the same file again (the summary said 2 stored, the server held 1).
                wait([future])
                with deferred():
                    record(path, label, future)
                    done += 1
        except KeyboardInterrupt:
            # Stop sending: the files not yet started are cancelled; the ones on their way are waited for, so
            # that the summary can say whether each was stored (a second Ctrl-C stops waiting).
            interrupted = True
            stop.set()  # a file waiting to be sent again after a refusal is not sent again
            pool.shutdown(wait=False, cancel_futures=True)
            if bar:
                bar.clear()
            in_flight = [f for _, _, f in futures[done:] if not f.cancelled()]
            print(f"interrupted: sending no more files; waiting for the {len(in_flight)} already on their way",
                  file=sys.stderr)
            try:
                for path, label, future in futures[done:]:
                    if not future.cancelled():
                        wait([future])
                        with deferred():
                            record(path, label, future)
            except KeyboardInterrupt:
                unknown = sum(1 for _, _, f in futures[done:] if not f.cancelled() and not f.done())
                print(f"{unknown} file(s) were being sent: whether the server stored them is unknown "
                      "(sgs-verify list shows what it has)", file=sys.stderr)
            tally.not_sent = sum(1 for _, _, f in futures if f.cancelled())
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=True)
    if bar:
        bar.close()
    seconds = time.perf_counter() - started
    total = len(jobs) + len(empty)
    print(tally.summary(total, client.address, seconds, len(files) + len(empty)),
          file=sys.stderr if args.json else sys.stdout)
    if interrupted:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if tally.failed:
        return EXIT_FAILED
    return EXIT_VIOLATIONS if tally.violations else EXIT_CLEAN


# ---------------------------------------------------------------------------------------- show / list

def _result_text(result: apb.GameResult) -> str:
    from verifier.text import SIDE

    if result.finished:
        return f"{SIDE.get(result.side, '?')} win, seats {list(result.winners)}"
    return f"unfinished: {result.reason}"


def _violation_text(v: apb.Violation, source: int = 0) -> str:
    """A violation in one line; ``source``: who made the decision it is about (Annotation.source), said first."""
    from verifier import text

    who = f"[{text.source(source)}] " if source else ""
    seat = f" seat {v.seat}" if v.HasField("seat") else ""
    crd = f" card {text.card(v.card)}" if v.HasField("card") else ""
    return f"{who}{v.code}{seat}{crd}: {v.message} [{v.rule}]"


def info_header(info: spb.ReplayInfo) -> list[str]:
    from verifier.text import ROLE

    m = info.metadata
    meta = ", ".join(f"{k} {v}" for k, v in (("tournament", m.tournament), ("round", m.round), ("table", m.table),
                                                ("submitter", m.submitter)) if v)
    lines = [
        f"replay {info.id}" + (f" (tenant {info.tenant})" if info.tenant and info.tenant != "default" else ""),
        f"  submitted {info.submitted_at.ToDatetime(tzinfo=UTC):%Y-%m-%d %H:%M:%S} UTC"
        + (f"; {meta}" if meta else ""),
        f"  {info.ruleset} {pb.Mode.Name(info.mode).removeprefix('MODE_').lower()}, seed {info.seed}, "
        f"{len(info.seats)} seats, {info.event_count} events"
        + (f", recorded by {info.recorder}" if info.recorder else "")
        if info.judged_by != "server" else
        f"  {info.ruleset} record, {len(info.seats)} seats, {info.event_count} records, not replayed by this engine: "
        "judged by its server's own rules",
    ]
    for i, s in enumerate(info.seats):
        general = f", {s.general}" if s.general else ""
        lines.append(f"  seat {i}: {s.player or '(unnamed)'} ({ROLE.get(s.role, '?')}{general})")
    codes = f" ({', '.join(info.violation_codes)})" if info.violation_codes else ""
    lines.append(f"  verdict: {info.violation_count} violation(s){codes}; {_result_text(info.result)}"
                 + ("; client replies the server's rules refused" if info.judged_by == "server" else
                    "" if info.followed else "; the log could not be followed to its end"))
    lines.append(f"  engine: {info.engine_version}")
    return lines


def replay_lines(res: spb.GetReplayResponse, violations_only: bool = False) -> Iterator[str]:
    from verifier.state import violations_by_source
    from verifier.text import describe, origin

    yield from info_header(res.info)
    replay = res.replay
    by_source = violations_by_source(replay)
    if by_source:
        yield f"  who decided: {by_source}"
    yield from score_lines(replay.result, res.info)
    if res.log.header.HasField("origin"):
        yield f"  origin: {origin(res.log.header.origin)}"
    for n in replay.header_notices:
        yield f"  header notice (not a violation): {n.code}: {n.message} [{n.rule}]"
    for v in replay.header_violations:
        yield f"  header: {_violation_text(v)}"
    if replay.not_replayed:
        yield f"  not replayed by this engine: {replay.not_replayed}"
    elif not replay.followed:
        yield f"  stopped following the log at event {replay.stopped_at}: {replay.stopped_reason}"
    yield from server_lines(replay, violations_only)
    yield ""
    events = res.log.events
    for ann in replay.annotations:
        if violations_only and not ann.violations:
            continue
        if ann.derived:
            what = describe(ann.event) if ann.event.WhichOneof("kind") else "(an unanswered request)"
            line = f"    +  {what}"
        else:
            what = describe(events[ann.index]) if ann.index < len(events) else "?"
            line = f"{ann.index:5d}  {what}"
        mark = STATUS_MARK.get(ann.status, "?")
        yield line if mark in ("ok", "derived") else f"{line}   <{mark}>"
        for v in ann.violations:
            yield f"         !! {_violation_text(v, ann.source)}"


_SERVER_VERDICTS = {apb.SERVER_VERDICT_OK: "ok", apb.SERVER_VERDICT_REFUSED: "refused",
                    apb.SERVER_VERDICT_UNJUDGED: "unjudged"}


def server_lines(replay: apb.AnnotatedReplay, violations_only: bool = False) -> Iterator[str]:
    """The recording server's own verdicts, beside this engine's or alone (docs/freekill-bridge.md#two-engines):
    who judged, each client reply it refused (every check unless ``violations_only``), which replies each engine
    judged, and where the two disagree."""
    if not replay.server_judge:
        return
    cov = replay.coverage
    yield f"  the server's own rules ({replay.server_judge}): {len(replay.server_checks)} reply check(s)"
    yield (f"  client replies {cov.client_replies}: judged by both {cov.judged_by_both}, by this engine only "
           f"{cov.judged_by_engine_only}, by the server only {cov.judged_by_server_only}, by neither "
           f"{cov.judged_by_neither}")
    for why in cov.why_unjudged:
        yield f"    unjudged: {why}"
    for c in replay.server_checks:
        if violations_only and c.verdict != apb.SERVER_VERDICT_REFUSED:
            continue
        seat = f" (seat {c.seat})" if c.HasField("seat") else ""
        event = f", event {c.event}" if c.HasField("event") else ""
        verdict = _SERVER_VERDICTS.get(c.verdict, "?") + (f" {c.code}" if c.code else "")
        yield f"  record {c.reply}{event}: player {c.player}{seat}, {c.request}: {verdict}" + \
            (f": {c.why}" if c.why else "")
    for d in replay.disagreements:
        ours = ",".join(d.engine_codes) or "allowed"
        yield (f"  DISAGREE at record {d.reply}" + (f", event {d.event}" if d.HasField("event") else "")
               + f": this engine {ours}; the server {_SERVER_VERDICTS.get(d.server_verdict, '?')} {d.server_code} "
               f"{d.server_why}".rstrip())


def score_lines(result: apb.GameResult, info: spb.ReplayInfo) -> Iterator[str]:
    """The seats' scores (docs/rules.md#scoring), each with how it is made up."""
    if result.scores:
        yield "  scores (docs/rules.md#scoring):"
    for s in result.scores:
        player = info.seats[s.seat].player if s.seat < len(info.seats) else ""
        yield f"    seat {s.seat}{f' {player}' if player else ''}: {s.score}  ({s.basis})"


def run_show(args: argparse.Namespace) -> int:
    try:
        with connect(args) as client:
            res = client.get(args.id, include_log=True, run=args.run_name)
    except (ServiceError, ValueError) as err:
        return _fail(err)
    if args.json:
        print(json_format.MessageToJson(res, ensure_ascii=False, indent=1, preserving_proto_field_name=True,
                                        always_print_fields_with_no_presence=True))
    else:
        for line in replay_lines(res, args.violations):
            print(line)
    return EXIT_CLEAN


def list_filter(args: argparse.Namespace) -> ListFilter:
    """The stored replays the filter options (--tournament ... --until) select."""
    return ListFilter(tournament=args.tournament, round=args.round, table=args.table, submitter=args.submitter,
                      player=args.player, violation_code=args.code,
                      violation_source=SOURCE_CHOICES.get(getattr(args, "violation_source", "") or "", 0),
                      has_violations=True if args.violations else False if args.clean else None,
                      submitted_after=args.since, submitted_before=args.until, tenant=getattr(args, "tenant", "") or "",
                      judged_by=getattr(args, "judged_by", "") or "")


def checked_code(code: str) -> str:
    """--code as the catalogue spells it (any case taken); ValueError naming it when it is no violation code."""
    import difflib

    from verifier.codes import CATALOGUE, SERVER_CHECK_CODES

    wanted = code.strip().upper()
    if not wanted or wanted in CATALOGUE or wanted in SERVER_CHECK_CODES:
        return wanted
    close = difflib.get_close_matches(wanted, [*CATALOGUE, *SERVER_CHECK_CODES], n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ValueError(f"--code {code!r} is not a violation code (docs/codes.md lists them){hint}")


def codes_column(codes: list[str], width: int = 24) -> str:
    """The codes of a replay in ``width`` characters, never a code cut in half: those that do not fit are
    counted ("+2"); a single code longer than the column is shown whole."""
    text = ",".join(codes) or "-"
    if len(text) <= width:
        return f"{text:<{width}}"
    for n in range(len(codes) - 1, 0, -1):
        shown = ",".join(codes[:n]) + f" +{len(codes) - n}"
        if len(shown) <= width:
            return f"{shown:<{width}}"
    return codes[0] + (f" +{len(codes) - 1}" if len(codes) > 1 else "")


LABEL_FILTERS = (("tournament", "--tournament"), ("round", "--round"), ("table", "--table"),
                 ("submitter", "--submitter"), ("player", "--player"))


def why_nothing(client: VerifierClient, filters: ListFilter) -> list[str]:
    """For a list that matched nothing: each label filter that alone matches no stored replay, said."""
    from dataclasses import replace

    said = []
    for field_name, option in LABEL_FILTERS:
        value = getattr(filters, field_name)
        if not value:
            continue
        alone = replace(ListFilter(tenant=filters.tenant), **{field_name: value})
        if client.list_page(alone, page_size=1).total_count == 0:
            said.append(f"no stored replay has {option} {value!r} (labels match exactly, case included)")
    return said


def run_list(args: argparse.Namespace) -> int:
    try:
        args.code = checked_code(args.code)
    except ValueError as err:
        return _fail(err)
    filters = list_filter(args)
    shown = 0
    any_server = False
    notes: list[str] = []
    try:
        with connect(args) as client:
            total = client.list_page(filters, page_size=1).total_count
            if total and not args.json:
                print(f"{'replay':<12}  {'submitted (UTC)':<16}  {'tournament':<12}  {'events':>9}  {'violations':>8}  "
                      f"{'codes':<24}  players")
            for info in client.list(filters, limit=args.limit or None):
                shown += 1
                if args.json:
                    print(json_format.MessageToJson(info, ensure_ascii=False, indent=None,
                                                    preserving_proto_field_name=True,
                                                    always_print_fields_with_no_presence=True))
                    continue
                when = info.submitted_at.ToDatetime(tzinfo=UTC)
                codes = codes_column(list(info.violation_codes))
                # every player in full (the last column, so nothing after it needs aligning)
                players = ",".join(s.player for s in info.seats)
                # (a record our engine did not replay counts its server's records and refusals: marked *)
                mark = "*" if info.judged_by == "server" else " "
                any_server = any_server or info.judged_by == "server"
                print(f"{info.id[:12]}  {when:%Y-%m-%d %H:%M}  {info.metadata.tournament or '-':<12.12}  "
                      f"{info.event_count:6d} ev{mark} {info.violation_count:3d} viol  {codes}  {players}")
            if total == 0:
                notes = why_nothing(client, filters)
    except (ServiceError, ValueError) as err:
        return _fail(err)
    if not args.json:
        print(f"{shown} of {total} matching replay(s)")
        if any_server:
            print("* not replayed by this engine: its server's records, and the client replies its rules refused "
                  "(sgs-verify show ID)")
    for note in notes:
        print(f"sgs-verify: {note}", file=sys.stderr)
    return EXIT_CLEAN


# ---------------------------------------------------------------------------------------- live / delete

def run_live(args: argparse.Namespace) -> int:
    from verifier import LogFormatError, load_log
    from verifier.logio import MAX_LOG_BYTES
    from verifier.text import describe

    try:
        log = load_log(read_named_file(args.file, MAX_LOG_BYTES))
    except (OSError, LogFormatError) as err:
        return _fail(err)
    events = list(log.events)

    def batches() -> Iterator[list[pb.Event]]:
        for start in range(0, len(events), max(1, args.batch_size)):
            if start and args.delay:
                time.sleep(args.delay)
            yield events[start:start + args.batch_size]

    violations = 0
    started = time.perf_counter()
    try:
        with connect(args) as client:
            for update in client.live(log.header, batches(), _metadata(args), discard=args.discard):
                for ann, v in update.violations:
                    violations += 1
                    where = f"before event {ann.index} (derived)" if ann.derived else f"event {ann.index}"
                    what = describe(events[ann.index]) if not ann.derived and ann.index < len(events) else ""
                    print(f"[{time.perf_counter() - started:6.2f}s, {update.events_received} received] {where}: "
                          f"{_violation_text(v, ann.source)}" + (f"\n    {what}" if what else ""))
                if update.finished is not None:
                    info = update.finished.info
                    stored = (f"stored as {info.id}" if update.finished.stored and update.finished.created
                              else f"already stored as {info.id}" if update.finished.stored else "not stored")
                    print(f"game {'over' if update.game_over else 'not over'}: {_result_text(info.result)}; "
                          f"{info.violation_count} violation(s); {stored}")
    except (ServiceError, ValueError) as err:
        return _fail(err)
    return EXIT_VIOLATIONS if violations else EXIT_CLEAN


def run_delete(args: argparse.Namespace) -> int:
    try:
        with connect(args) as client:
            replay_id = client.get(args.id).info.id  # a unique prefix names one replay: say which
            client.delete(replay_id)
    except (ServiceError, ValueError) as err:
        return _fail(err)
    print(f"deleted {replay_id}")
    return EXIT_CLEAN


__all__ = ["default_server", "register"]
