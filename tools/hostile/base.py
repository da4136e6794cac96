"""The hostile-client harness's plug-in interface (issue 27). Read this before writing an attack.

An attack module is ``tools/hostile/<something>_attacks.py`` holding ``ATTACKS: list[Attack]``;
``python -m tools.hostile`` imports every such module it finds and runs their attacks in order, one at a
time, against one server it started (TLS + tokens, on loopback, two tenants).

An attack is an ``Attack(name, item, run, quick=True, seconds=30.0)``:

- ``name``: short, unique, kebab-case (``silent-unary-calls``); ``--only NAME`` runs just that one;
- ``item``: the number of the issue-27 finding it reproduces (None for an extra one);
- ``run(ctx) -> Outcome``: does the attack against ``ctx`` and says what happened. It must be bounded in
  count and time (``ctx.quick`` asks for a smaller version, for CI: a few seconds at most), talk to
  loopback only (``ctx.grpc_address``, ``ctx.http_url``), and clean up what it opened (threads joined,
  channels closed) before it returns. It must not raise for an answer it did not like: a raised exception
  is reported as the attack's failure (held = False), with the exception;
- ``quick``: whether the attack runs at all under ``--quick`` (the CI run);
- ``seconds``: a bound on the attack's run time the harness reports against (it does not kill it).

``Outcome(sent, got, held, note="")``: ``sent`` says what was sent (counts and sizes), ``got`` what came
back (status codes and counts), ``held`` whether the server defended itself as docs/security.md says it
does (the attacker refused or bounded as documented). Whether another tenant was denied service meanwhile
and the peak memory are measured by the harness, not the attack: a probe tenant's calls run all through
each attack (``ctx.tokens["probe"]``), and the server's and its workers' resident memory is sampled.

``Context`` is what an attack may use: addresses, the CA file, tokens by name (below), the server's limits
as started, the backend, the quick flag, and helpers for a gRPC channel or an HTTP client with a token.

Tokens (``ctx.tokens``): ``attacker`` (tenant ``mallory``: submit, read, delete), ``attacker-reader``
(tenant ``mallory``: read), ``probe`` (tenant ``probe``: submit, read; the harness's), ``admin`` (tenant
``ops``: admin). ``ctx.token_db`` is the database URL, for an attack that creates or revokes a token of
its own (``ctx.make_token``, ``ctx.revoke_token``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Outcome:
    sent: str
    got: str
    held: bool
    note: str = ""


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The limits the harness's server was started with (its command line), for attacks to size themselves."""

    max_message_bytes: int
    max_buffered_bytes: int
    max_events: int
    max_record_bytes: int
    max_streams_per_tenant: int
    max_concurrent: int
    stream_idle_seconds: float
    first_message_seconds: float
    workers: int
    rate_limit: float = 100.0  # each tenant's requests a second (--rate-limit)
    rate_burst: int = 200  # and at once (--rate-burst)


@dataclass(slots=True)
class Context:
    grpc_address: str
    http_url: str
    ca: Path
    tokens: dict[str, str]
    limits: ServerLimits
    backend: str
    quick: bool
    token_db: str
    server_pid: int
    folder: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def channel(self, **options: Any) -> grpc.Channel:
        """A TLS channel to the server (the harness's CA; large messages allowed both ways)."""
        credentials = grpc.ssl_channel_credentials(self.ca.read_bytes())
        opts = [("grpc.max_send_message_length", 1 << 30), ("grpc.max_receive_message_length", 1 << 30),
                *options.items()]
        return grpc.secure_channel(self.grpc_address, credentials, options=opts)

    def metadata(self, token_name: str | None) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.tokens[token_name]}"),) if token_name else ()

    def http(self, token_name: str | None = None, **kwargs: Any) -> Any:
        """An httpx.Client on the viewer, trusting the harness's CA, with the named token (if any)."""
        import httpx

        headers = {"Authorization": f"Bearer {self.tokens[token_name]}"} if token_name else {}
        return httpx.Client(base_url=self.http_url, verify=str(self.ca), headers=headers,
                            timeout=kwargs.pop("timeout", 30), **kwargs)

    def make_token(self, tenant: str, scopes: str, name: str) -> str:
        return cli(["token", "create", "--tenant", tenant, "--scopes", scopes, "--name", name, "--db", self.token_db])

    def revoke_token(self, token: str) -> None:
        cli(["token", "revoke", token.split("_")[1], "--db", self.token_db])


@dataclass(frozen=True, slots=True)
class Attack:
    name: str
    item: int | None
    run: Callable[[Context], Outcome]
    quick: bool = True
    seconds: float = 30.0


def cli(args: Sequence[str]) -> str:
    """Run ``sgs-verify ARGS`` (this tree's) and return its stdout; RuntimeError with its stderr on failure."""
    done = subprocess.run([sys.executable, "-m", "clients.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"sgs-verify {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout.strip()
