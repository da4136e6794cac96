"""Access commands, on the database directly (like `db upgrade`): `token create|list|revoke` and `audit`
(docs/security.md). They need the database's URL (--db, $SGS_VERIFY_DB; default the embedded SQLite),
not a token: whoever can reach the database is the operator."""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED = 0, 2


def register(sub: Any) -> None:
    token = sub.add_parser("token", help="create, list and revoke the bearer tokens of the service",
                           description="Bearer tokens for the service (docs/security.md). Each belongs to a tenant "
                           "and has scopes: submit (VerifyLog, UploadLog, VerifyLive), read (GetReplay, "
                           "ListReplays), delete (DeleteReplay), admin (all of them on every tenant, and Regress, "
                           "ListRuns). Only a hash of each token is stored; `create` prints the token once.")
    actions = token.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="make a token and print it (once)",
                                description="Make a token for a tenant with the given scopes and print it, once: "
                                "only its hash is stored.")
    create.add_argument("--tenant", default="default", help="the tenant the token's replays belong to (default: "
                        "'default', the tenant of replays stored without a token)")
    create.add_argument("--scopes", default="submit,read", help="comma-separated: submit, read, delete, admin "
                        "(default submit,read)")
    create.add_argument("--name", default="", help="what the token is for (shown in lists and the audit log)")
    _db_options(create)
    create.set_defaults(run=run_create)
    ls = actions.add_parser("list", help="list the tokens (never the tokens themselves)",
                            description="List the tokens: id, tenant, scopes, when made, whether revoked, and name "
                            "(never the tokens themselves).")
    ls.add_argument("--all", action="store_true", help="revoked tokens too")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    _db_options(ls)
    ls.set_defaults(run=run_list)
    revoke = actions.add_parser("revoke", help="revoke a token (servers stop taking it within 5 s)",
                                description="Revoke a token: every server stops taking it within 5 s.")
    revoke.add_argument("id", help="the token's id (sgs-verify token list)")
    _db_options(revoke)
    revoke.set_defaults(run=run_revoke)

    audit = sub.add_parser("audit", help="show the audit log (deleted replays, token changes)",
                           description="Show the audit log, newest first: deleted replays and token changes, who "
                           "did them and when.")
    audit.add_argument("--limit", type=int, default=50, help="the newest this many entries (default 50)")
    audit.add_argument("--tenant", default=None, help="only this tenant's entries")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    _db_options(audit)
    audit.set_defaults(run=run_audit)


def _db_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", help="database URL ($SGS_VERIFY_DB; default: the embedded SQLite)")
    parser.add_argument("--data-dir", type=Path, help="folder of the embedded SQLite database")


def _actor() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no user name to be had (a container without one)
        user = "?"
    return f"cli {user}@{socket.gethostname()}"


def _open(args: argparse.Namespace) -> Any:
    from clients.commands.service import _service_config
    from service.server import open_store

    return open_store(_service_config(args))


def _guarded(action: Any, args: argparse.Namespace) -> int:
    from clients.commands.service import _fail, _startup_failure

    try:
        store = _open(args)
    except Exception as err:
        failure = _startup_failure(err)
        if failure is None:
            raise
        return _fail(failure)
    try:
        code: int = action(store, args)
        return code
    except Exception as err:
        from storage.store import StorageError

        if isinstance(err, StorageError):
            return _fail(err)
        raise
    finally:
        store.close()


def _when(at: Any) -> str:
    return "-" if at is None else f"{at:%Y-%m-%d %H:%M:%S}"


def run_create(args: argparse.Namespace) -> int:
    from storage.access import create_token
    from storage.store import Audit

    def create(store: Any, args: argparse.Namespace) -> int:
        from storage.access import any_active_token

        scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
        first = not any_active_token(store)
        if first:  # said before it is done: it changes how every server on this database answers
            print(first_token_notice(args.tenant, scopes, store.count()), file=sys.stderr)
        token, info = create_token(store, args.tenant, scopes, args.name, Audit(_actor()))
        print(token)
        print(f"token {info.id} for tenant {info.tenant!r}, scopes {' '.join(info.scopes)}: keep it now, it is not "
              "shown again (only its hash is stored). Clients take it as --token or $SGS_VERIFY_TOKEN."
              + (f" To go back to an open server: sgs-verify token revoke {info.id}, then restart the server."
                 if first else ""),
              file=sys.stderr)
        return EXIT_OK

    return _guarded(create, args)


def first_token_notice(tenant: str, scopes: list[str], stored: int) -> str:
    """What creating the first token changes (docs/security.md), said before it is made."""
    lines = ["sgs-verify: this is the first token: a server using this database that runs open now (on loopback, "
             "with no token) turns authentication on within 5 s, and from then on every call needs a token "
             "(--token or $SGS_VERIFY_TOKEN)."]
    if stored and tenant != "default":
        lines.append(f"sgs-verify: the {stored} replay(s) stored so far belong to the tenant 'default'; this token "
                     f"(tenant {tenant!r}) does not see them (a token with --tenant default, or an admin one, does).")
    elif stored and "admin" not in scopes:
        lines.append(f"sgs-verify: the {stored} replay(s) stored so far belong to the tenant 'default', this token's "
                     "own: it sees them.")
    return "\n".join(lines)


# A server never reopens by itself (a revoked token must not open it to everyone on the machine): say so.
LAST_TOKEN_NOTICE = ("sgs-verify: no active token is left. A server that is running keeps requiring a token (and "
                     "now takes none) until it is restarted; restarted on loopback it runs open again, as with no "
                     "token ever made (docs/security.md).")


def run_list(args: argparse.Namespace) -> int:
    from storage.access import list_tokens

    def show(store: Any, args: argparse.Namespace) -> int:
        tokens = list_tokens(store, include_revoked=args.all)
        for t in tokens:
            if args.json:
                print(json.dumps({"id": t.id, "name": t.name, "tenant": t.tenant, "scopes": list(t.scopes),
                                  "created_at": t.created_at.isoformat(), "created_by": t.created_by,
                                  "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None}))
            else:
                state = f"revoked {_when(t.revoked_at)}" if t.revoked_at else "active"
                print(f"{t.id}  {t.tenant:<16.16}  {' '.join(t.scopes):<24}  {_when(t.created_at)}  {state:<27}  "
                      f"{t.name}")
        if not args.json:
            print(f"{len(tokens)} token(s)" + ("" if args.all else " active (--all for revoked ones too)"))
        return EXIT_OK

    return _guarded(show, args)


def run_revoke(args: argparse.Namespace) -> int:
    from storage.access import revoke_token
    from storage.store import Audit

    def revoke(store: Any, args: argparse.Namespace) -> int:
        from storage.access import any_active_token

        info = revoke_token(store, args.id.strip(), Audit(_actor()))
        print(f"revoked token {info.id} (tenant {info.tenant!r}, {info.name or 'no name'}) at {_when(info.revoked_at)}")
        if not any_active_token(store):
            print(LAST_TOKEN_NOTICE, file=sys.stderr)
        return EXIT_OK

    return _guarded(revoke, args)


def run_audit(args: argparse.Namespace) -> int:
    from storage.access import audit_log

    def show(store: Any, args: argparse.Namespace) -> int:
        for e in audit_log(store, args.limit, args.tenant):
            if args.json:
                print(json.dumps({"at": e.at.isoformat(), "actor": e.actor, "tenant": e.tenant, "action": e.action,
                                  "target": e.target, "request_id": e.request_id, "detail": e.detail},
                                 ensure_ascii=False))
            else:
                print(f"{_when(e.at)}  {e.action:<14}  {e.tenant:<16.16}  {e.target[:16]:<16}  {e.actor}"
                      + (f"  [request {e.request_id}]" if e.request_id else "") + (f"  {e.detail}" if e.detail else ""))
        return EXIT_OK

    return _guarded(show, args)
