"""Who may use the service: bearer tokens, and the audit log (docs/security.md).

A token is ``sgsv_<id>_<secret>``: 12 hex digits of public id (what lists, logs and the audit log name) and
43 characters of base64url secret (256 random bits). The database keeps only the SHA-256 of the whole
token: a high-entropy random token needs no slow password hash, and the hash cannot be turned back into a
token. A presented token is looked up by its id and its hash compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from storage.models import ApiToken, AuditEntry
from storage.store import DEFAULT_TENANT, Audit, InvalidQuery, StorageError, Store, tenant_problem

TOKEN_PREFIX = "sgsv"
TOKEN_FORMAT = re.compile(r"sgsv_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
SCOPES = ("submit", "read", "delete", "admin")
MAX_NAME = 200


class TokenNotFound(StorageError, LookupError):
    """No token has this id."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as stored, without its hash."""

    id: str
    name: str
    tenant: str
    scopes: tuple[str, ...]
    created_at: datetime
    created_by: str
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True, slots=True)
class AuditRecord:
    at: datetime
    actor: str
    tenant: str
    action: str
    target: str
    request_id: str
    detail: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_token(token: str) -> str | None:
    """The id of a well-formed token, or None."""
    m = TOKEN_FORMAT.fullmatch(token)
    return m.group(1) if m else None


def scope_problems(scopes: Iterable[str]) -> list[str]:
    return [f"unknown scope {s!r} (the scopes are {', '.join(SCOPES)})" for s in scopes if s not in SCOPES]


def _info(row: ApiToken) -> TokenInfo:
    return TokenInfo(row.id, row.name, row.tenant, tuple(row.scopes.split()), row.created_at, row.created_by,
                     row.revoked_at)


def create_token(store: Store, tenant: str, scopes: Iterable[str], name: str, audit: Audit) -> tuple[str, TokenInfo]:
    """A new token for the tenant with these scopes: (the token — shown once, never stored —, its record)."""
    wanted = tuple(dict.fromkeys(scopes))
    problems = scope_problems(wanted) + [p for p in (tenant_problem(tenant),) if p]
    if not wanted:
        problems.append(f"a token needs at least one scope ({', '.join(SCOPES)})")
    if len(name) > MAX_NAME or "\0" in name:
        problems.append(f"the name is over {MAX_NAME} characters or holds a NUL")
    if problems:
        raise InvalidQuery("; ".join(problems))
    token_id = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
    now = store.clock()
    row = ApiToken(id=token_id, name=name, tenant=tenant, scopes=" ".join(wanted), token_hash=token_hash(token),
                   created_at=now, created_by=audit.actor[:200], revoked_at=None)
    with store.transaction(write=True) as session:
        session.add(row)
        session.add(audit.entry(now, "token.create", tenant, token_id,
                                f"name {name!r}, scopes {' '.join(wanted)}"))
    return token, _info(row)


def revoke_token(store: Store, token_id: str, audit: Audit) -> TokenInfo:
    """Revoke a token (it stays listed, as revoked); revoking it again changes nothing."""
    with store.transaction(write=True) as session:
        row = session.get(ApiToken, token_id)
        if row is None:
            raise TokenNotFound(f"no token has the id {token_id[:40]!r} (sgs-verify token list shows them)")
        if row.revoked_at is None:
            row.revoked_at = store.clock()
            session.add(audit.entry(row.revoked_at, "token.revoke", row.tenant, row.id, f"name {row.name!r}"))
        return _info(row)


def list_tokens(store: Store, include_revoked: bool = False) -> list[TokenInfo]:
    query = select(ApiToken).order_by(ApiToken.tenant, ApiToken.created_at)
    if not include_revoked:
        query = query.where(ApiToken.revoked_at.is_(None))
    with store.transaction() as session:
        return [_info(row) for row in session.scalars(query)]


def any_active_token(store: Store) -> bool:
    with store.transaction() as session:
        return session.scalar(select(ApiToken.id).where(ApiToken.revoked_at.is_(None)).limit(1)) is not None


@dataclass(frozen=True, slots=True)
class OpenModeExposure:
    """What a store holds that a server running open (no active token) must not serve as if it were one user's."""

    tokens: int  # tokens ever made, revoked ones included (none active, or the server would not run open)
    other_tenants: list[str]  # tenants other than the default one with replays stored


def open_mode_exposure(store: Store) -> OpenModeExposure:
    """Counted at start by a server about to run open (issue 27, item 5): it says so loudly when the store was
    used with tokens, or holds other tenants' replays — open mode serves the default tenant only."""
    from sqlalchemy import func

    from storage.models import Replay

    with store.transaction() as session:
        tokens = session.scalar(select(func.count()).select_from(ApiToken)) or 0
        tenants = list(session.scalars(select(Replay.tenant).where(Replay.tenant != DEFAULT_TENANT)
                                       .group_by(Replay.tenant).order_by(Replay.tenant).limit(20)))
    return OpenModeExposure(int(tokens), tenants)


def check_token(store: Store, token: str) -> TokenInfo | None:
    """The active token this is, or None (malformed, unknown, wrong secret or revoked)."""
    token_id = parse_token(token)
    if token_id is None:
        return None
    with store.transaction() as session:
        row = session.get(ApiToken, token_id)
        if row is None:
            return None
        good = hmac.compare_digest(row.token_hash.encode(), token_hash(token).encode())
        return _info(row) if good and row.revoked_at is None else None


def audit_log(store: Store, limit: int = 100, tenant: str | None = None) -> list[AuditRecord]:
    """The newest entries first."""
    query = select(AuditEntry).order_by(AuditEntry.at.desc(), AuditEntry.id.desc()).limit(max(1, limit))
    if tenant is not None:
        query = query.where(AuditEntry.tenant == tenant)
    with store.transaction() as session:
        return [AuditRecord(e.at, e.actor, e.tenant, e.action, e.target, e.request_id, e.detail)
                for e in session.scalars(query)]
