"""A client in another language against a real `sgs-verify serve`: clients/node-example/verify.js (Node,
@grpc/grpc-js and @grpc/proto-loader from npm, the service read from proto/), as docs/other-languages.md
describes it. It verifies a log sent as its bytes and as a JSON request body, lists the replays with one of
its codes, and gets two refusals with their statuses.

Skipped without `node` or without the example's packages (`npm ci --prefix clients/node-example`), except
under CI=true, where that is a failure: CI installs both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import json_format

from clients.client import VerifierClient
from sgsverify.v1 import service_pb2 as spb
from tests.service.test_service_cli import ROOT, ServeProcess

EXAMPLE = ROOT / "clients" / "node-example"


def node_or_skip() -> str:
    node = shutil.which("node")
    missing = ("node is not installed" if node is None else
               "the Node example's packages are not installed (npm ci --prefix clients/node-example)"
               if not (EXAMPLE / "node_modules" / "@grpc" / "grpc-js").is_dir() else "")
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing}: CI must run the non-Python client")
        pytest.skip(missing)
    assert node is not None
    return node


def test_the_node_client_verifies_lists_and_reads_the_statuses(tmp_path: Path) -> None:
    node = node_or_skip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGS_VERIFY_")}
    server = ServeProcess(["--data-dir", str(tmp_path / "data")], env)
    try:
        log = ROOT / "docs" / "examples" / "second_slash.json"
        done = subprocess.run([node, "verify.js", server.address, str(log)], cwd=EXAMPLE, capture_output=True,
                              text=True, timeout=120, env=env)
    finally:
        server.kill()
    assert done.returncode == 0, done.stdout + done.stderr
    steps = {s["step"]: s for s in map(json.loads, done.stdout.splitlines())}
    encoded = steps["VerifyLog encoded_log"]
    assert encoded["created"] is True and encoded["events"] == 7 and encoded["violations"] == 3
    assert encoded["codes"] == ["OUT_OF_RANGE", "SLASH_LIMIT"]
    assert encoded["result"]["finished"] is False  # a default value, printed
    # The JSON file as the request's `log` message is the same game.
    assert steps["VerifyLog log"]["codes"] == ["OUT_OF_RANGE", "SLASH_LIMIT"]
    assert steps["ListReplays"]["total"] >= 1 and encoded["id"] in steps["ListReplays"]["ids"]
    unknown = steps["ListReplays unknown code"]["error"]
    assert unknown["status"] == "INVALID_ARGUMENT" and "the codes are upper case: OUT_OF_RANGE" in unknown["details"]
    assert steps["GetReplay unknown id"]["error"]["status"] == "NOT_FOUND"


def test_the_guides_request_body_is_a_real_verify_log_request(tmp_path: Path) -> None:
    """docs/other-languages.md's grpcurl body parses as a VerifyLogRequest and gets the answer it shows."""
    guide = (ROOT / "docs" / "other-languages.md").read_text(encoding="utf-8")
    body = guide.split("<<'JSON'\n", 1)[1].split("\nJSON\n", 1)[0]
    request = json_format.Parse(body, spb.VerifyLogRequest())
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGS_VERIFY_")}
    server = ServeProcess(["--data-dir", str(tmp_path / "data")], env)
    try:
        with VerifierClient(server.address) as client:
            answer: spb.VerifyLogResponse = client.stub.VerifyLog(request, timeout=60)
    finally:
        server.kill()
    assert answer.created and answer.info.metadata.tournament == "spring-cup"
    assert list(answer.info.violation_codes) == ["OUT_OF_RANGE", "SLASH_LIMIT"]
    assert answer.info.id in guide and f'"eventCount": {answer.info.event_count}' in guide
    assert not answer.replay.annotations  # summary_only
