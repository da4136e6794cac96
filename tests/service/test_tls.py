"""TLS on gRPC, the viewer and the metrics endpoint, with certificates made in the test (tests/service/certs.py):
a client that trusts the CA connects, one that does not or that speaks plaintext is refused; with
--tls-client-ca a client without a certificate (or with one of another CA) is refused and one with it
connects; and where a server may listen without TLS or tokens."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from clients.cli import main
from clients.client import ServiceUnavailable, VerifierClient
from clients.selfplay import play_game
from service.config import ServiceConfig
from service.server import BackgroundServer, ServerStartError, VerificationServer, describe_start
from tests.service.certs import Pki, make_pki
from tests.service.conftest import fresh_database, make_token, server_config


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_tls_without_client_certificates(tmp_path: Path, pki: Pki) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    token = make_token(url, "acme", "submit,read")
    config = server_config(url, tmp_path, tls_cert=pki.server_cert, tls_key=pki.server_key,
                           http_address="127.0.0.1:0", metrics_address="127.0.0.1:0")
    with BackgroundServer(config) as server:
        said = describe_start(server.server)
        assert "(gRPC, TLS;" in said and "bearer tokens required" in said
        with VerifierClient(server.address, token=token, tls_ca=pki.ca, timeout=30) as c:
            assert c.verify(play_game(1, 5)).created
            assert c.health() == "SERVING"
        with VerifierClient(server.address, token=token, timeout=5) as plain, pytest.raises(ServiceUnavailable):
            plain.list_page()
        with VerifierClient(server.address, token=token, tls_ca=pki.other_ca, timeout=5) as wrong, \
                pytest.raises(ServiceUnavailable):
            wrong.list_page()
        # The viewer and the metrics are served over HTTPS with the same certificate.
        assert server.http_url.startswith("https://")
        with httpx.Client(base_url=server.http_url, verify=ssl.create_default_context(cafile=pki.ca)) as http:
            assert http.get("/api/replays", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        with pytest.raises(httpx.HTTPError):
            httpx.get(server.http_url.replace("https://", "http://") + "api/replays", timeout=5)
        metrics_url = server.server.metrics_url
        assert metrics_url is not None and metrics_url.startswith("https://")
        scraped = httpx.get(metrics_url, verify=ssl.create_default_context(cafile=pki.ca), timeout=10)
        assert "sgs_verify_requests_total" in scraped.text


def test_tls_with_client_certificates(tmp_path: Path, pki: Pki, capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    token = make_token(url, "acme", "submit,read")
    config = server_config(url, tmp_path, tls_cert=pki.server_cert, tls_key=pki.server_key,
                           tls_client_ca=pki.ca)
    with BackgroundServer(config) as server:
        assert "client certificates required" in describe_start(server.server)
        with VerifierClient(server.address, token=token, tls_ca=pki.ca, timeout=5) as anonymous, \
                pytest.raises(ServiceUnavailable):
            anonymous.list_page()
        with VerifierClient(server.address, token=token, tls_ca=pki.ca, client_cert=pki.client_cert,
                            client_key=pki.client_key, timeout=30) as c:
            assert c.verify(play_game(2, 5)).created
        # The CLI takes the same: --tls-ca, --client-cert, --client-key, --token.
        common = ["--server", server.address, "--tls-ca", str(pki.ca), "--token", token]
        assert main(["list", *common]) == 2
        assert main(["list", *common, "--client-cert", str(pki.client_cert), "--client-key", str(pki.client_key)]) == 0
        assert "1 of 1 matching" in capsys.readouterr().out
        assert main(["list", *common, "--client-cert", str(pki.client_cert)]) == 2  # a certificate needs its key
        assert "needs its key" in capsys.readouterr().err


def test_bad_tls_files_are_said_plainly(tmp_path: Path, pki: Pki) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    with pytest.raises(ServerStartError, match="cannot use --tls-cert"):
        BackgroundServer(server_config(url, tmp_path, tls_cert=pki.server_cert, tls_key=pki.client_key)).start()
    assert main(["serve", "--data-dir", str(tmp_path), "--address", "127.0.0.1:0", "--tls-cert",
                 str(pki.server_cert)]) == 2


def test_where_a_server_may_listen(tmp_path: Path, pki: Pki, capsys: pytest.CaptureFixture[str]) -> None:
    """Loopback: open without tokens (and says so). Any other address: TLS and tokens, or --insecure. (The
    decision is made before anything is bound: these servers never listen on another address.)"""
    url, _ = fresh_database("sqlite", tmp_path)

    def exposure(config: ServiceConfig, tokens: bool) -> list[str]:
        return VerificationServer(config)._exposure(tokens)

    base = server_config(url, tmp_path)
    assert "authentication is OFF" in exposure(base, False)[0]
    assert exposure(base, True) == []
    for address in ("0.0.0.0:50051", "[::]:50051", "192.0.2.7:50051", "sgs.example:50051"):
        wide = server_config(url, tmp_path, address=address)
        with pytest.raises(ServerStartError, match=r"not a loopback address.*without TLS.*without tokens.*--insecure"):
            exposure(wide, False)
        with pytest.raises(ServerStartError, match="without TLS"):
            exposure(wide, True)
        tls = server_config(url, tmp_path, address=address, tls_cert=pki.server_cert, tls_key=pki.server_key)
        with pytest.raises(ServerStartError, match="without tokens"):
            exposure(tls, False)
        assert exposure(tls, True) == []
        insecure = server_config(url, tmp_path, address=address, insecure=True)
        assert "anyone who can reach it" in exposure(insecure, False)[0]
        assert "tokens travel in the clear" in exposure(insecure, True)[0]
    viewer_outside = server_config(url, tmp_path, http_address="0.0.0.0:8080")
    with pytest.raises(ServerStartError, match=r"0.0.0.0:8080 \(the viewer"):
        exposure(viewer_outside, True)
    # From the command line: refused before listening, exit 2.
    assert main(["serve", "--data-dir", str(tmp_path), "--address", "0.0.0.0:0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err
