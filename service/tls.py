"""TLS for the server (gRPC, the viewer, the metrics endpoint) from PEM files: ``--tls-cert`` (the
certificate chain), ``--tls-key`` and, to require client certificates, ``--tls-client-ca``."""

from __future__ import annotations

import ssl
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


def check_files(config: ServiceConfig) -> None:
    """ValueError naming the file when a certificate or key cannot be used (before gRPC says it less plainly)."""
    if config.tls_cert is None or config.tls_key is None:
        return
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
