"""The hostile-client harness's quick run (tools/hostile, issue 27): a TLS + tokens server on loopback, every
quick attack against it; each is held, the probe tenant is served all along, and memory stays within the bound
of docs/security.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the harness reads memory from /proc")
def test_the_quick_hostile_run_holds() -> None:
    pytest.importorskip("cryptography")  # (the harness makes its throwaway CA with it)
    done = subprocess.run([sys.executable, "-m", "tools.hostile", "--quick"], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "attacks held; no other tenant was denied service" in done.stdout
