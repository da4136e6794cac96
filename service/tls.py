"""TLS for the server (gRPC, the viewer, the metrics endpoint) from PEM files: ``--tls-cert`` (the
certificate chain), ``--tls-key`` and, to require client certificates, ``--tls-client-ca``."""

from __future__ import annotations

import ssl
import time
from pathlib import Path
from typing import Any

import grpc

from service.config import ServiceConfig


def server_credentials(config: ServiceConfig) -> grpc.ServerCredentials:
    assert config.tls_cert is not None and config.tls_key is not None
    ca = config.tls_client_ca.read_bytes() if config.tls_client_ca is not None else None
    return grpc.ssl_server_credentials([(config.tls_key.read_bytes(), config.tls_cert.read_bytes())],
                                       root_certificates=ca, require_client_auth=ca is not None)


def uvicorn_options(config: ServiceConfig) -> dict[str, Any]:
    """uvicorn.Config's TLS settings (none without a certificate)."""
    if config.tls_cert is None:
        return {}
    options: dict[str, Any] = {"ssl_certfile": str(config.tls_cert), "ssl_keyfile": str(config.tls_key)}
    if config.tls_client_ca is not None:
        options |= {"ssl_ca_certs": str(config.tls_client_ca), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options


# A certificate closer than this to its end is warned of at start (ACME clients renew at 30 days left).
EXPIRY_WARNING_DAYS = 30.0


def _validity(cert: Path, field: str) -> float | None:
    """A validity date (``notBefore``, ``notAfter``) of the (first, leaf) certificate of a PEM chain, as a Unix
    time; None if it cannot be told."""
    try:
        decoded = ssl._ssl._test_decode_cert(str(cert))  # type: ignore[attr-defined]  # CPython's own PEM reader
        return float(ssl.cert_time_to_seconds(decoded[field]))
    except (AttributeError, KeyError, ValueError, ssl.SSLError, OSError):
        return None


def not_after(cert: Path) -> float | None:
    """When the (first, leaf) certificate of a PEM chain expires, as a Unix time; None if it cannot be told."""
    return _validity(cert, "notAfter")


def not_before(cert: Path) -> float | None:
    """When the (first, leaf) certificate of a PEM chain becomes valid, as a Unix time; None if it cannot be
    told."""
    return _validity(cert, "notBefore")


def days_left(cert: Path, now: float | None = None) -> float | None:
    end = not_after(cert)
    return None if end is None else (end - (time.time() if now is None else now)) / 86400


def expiry_warning(config: ServiceConfig) -> str | None:
    """A warning when the certificate ends within EXPIRY_WARNING_DAYS (issue 27, item 12); check_files refuses an
    expired one."""
    if config.tls_cert is None:
        return None
    left = days_left(config.tls_cert)
    if left is None or left >= EXPIRY_WARNING_DAYS:
        return None
    return (f"the TLS certificate {config.tls_cert} expires in {left:.1f} days: renew it (clients refuse it once it "
            "has expired, and this server will not start with it)")


def check_files(config: ServiceConfig, now: float | None = None) -> None:
    """ValueError naming the file when a certificate or key cannot be used (before gRPC says it less plainly),
    or when the certificate has expired or is not yet valid: every client would fail its handshake, and nothing
    would say why."""
    if config.tls_cert is None or config.tls_key is None:
        return
    now = time.time() if now is None else now
    left = days_left(config.tls_cert, now)
    if left is not None and left <= 0:
        raise ValueError(f"the TLS certificate --tls-cert {config.tls_cert} has expired ({-left:.1f} days ago): "
                         "every client would refuse it; renew it")
    start = not_before(config.tls_cert)
    if start is not None and start > now:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start))
        raise ValueError(f"the TLS certificate --tls-cert {config.tls_cert} is not valid yet: from {when}, in "
                         f"{(start - now) / 86400:.1f} days; every client would refuse it until then (is this "
                         "machine's clock right?)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except (ssl.SSLError, OSError) as err:
        raise ValueError(f"cannot use --tls-cert {config.tls_cert} with --tls-key {config.tls_key}: {err}") from None
    if config.tls_client_ca is not None:
        try:
            context.load_verify_locations(config.tls_client_ca)
        except (ssl.SSLError, OSError) as err:
            raise ValueError(f"cannot use --tls-client-ca {config.tls_client_ca}: {err}") from None
