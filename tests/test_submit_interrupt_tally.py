"""`submit` interrupted: each file answered is counted once, wherever the Ctrl-C lands.

A Ctrl-C right after a file's "stored" line (between its tally and the loop moving on) once had the in-flight
loop count that file again: the summary said 2 stored while the server held 1 (test_newcomer_service's
test_ctrl_c_stops_submit_and_says_what_was_stored, 2 runs in 7 under load). Here the Ctrl-C is sent at
exactly that place, the progress bar's advance, by a real SIGINT to this process."""

from __future__ import annotations

import argparse
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from clients.client import Submission
from clients.commands import service as commands
from clients.interrupts import EXIT_INTERRUPTED
from clients.progress import ProgressBar
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import service_pb2 as spb


class _Client:
    address = "127.0.0.1:1"

    def wait_ready(self, timeout: float = 10.0) -> None:
        return None  # (a service that answers)

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_ctrl_c_after_a_files_tally_does_not_count_it_again(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    answered: list[str] = []
    lock = threading.Lock()

    def job(name: str) -> Any:
        def send() -> Submission:
            with lock:
                answered.append(name)
            return Submission(info=spb.ReplayInfo(id=name * 12, event_count=1), created=True,
                              replay=apb.AnnotatedReplay())
        return send

    files = [Path(f"{n}.json") for n in "ab"]
    monkeypatch.setattr(commands, "connect", lambda args: _Client())
    monkeypatch.setattr(commands, "_submissions", lambda client, paths, args: [(p, str(p), job(p.stem)) for p in files])
    monkeypatch.setattr(commands, "expand_folders", lambda paths, suffixes: (list(paths), []))
    advances = 0

    def advance(self: ProgressBar, *a: object, **k: object) -> None:
        nonlocal advances
        advances += 1
        if advances == 1:
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C, just after the first file's tally

    monkeypatch.setattr(ProgressBar, "advance", advance)
    args = argparse.Namespace(files=files, source="auto", jobs=1, json=False, quiet=True)
    assert commands.run_submit(args) == EXIT_INTERRUPTED
    out = capsys.readouterr().out
    summary = re.search(r"submitted (\d+) of 2 file\(s\) .*\((\d+) stored", out)
    assert summary, out
    assert int(summary[2]) == len(answered), (out, answered)
