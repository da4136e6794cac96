"""The option types several commands share (clients/commands/options.py): what each takes and what argparse is
told when it refuses."""

from __future__ import annotations

import argparse

import pytest

from clients.commands.options import positive_int, positive_seconds


def test_positive_seconds_takes_a_number_above_zero() -> None:
    assert positive_seconds("0.2") == 0.2
    assert positive_seconds("600") == 600.0


@pytest.mark.parametrize(("text", "why"), [("0", "greater than 0"), ("-1", "greater than 0"),
                                           ("nan", "greater than 0"), ("soon", "not a number of seconds")])
def test_positive_seconds_refuses_the_rest(text: str, why: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=why):
        positive_seconds(text)


@pytest.mark.parametrize(("text", "why"), [("0", "greater than 0"), ("1.5", "not a whole number")])
def test_positive_int_refuses_what_is_not_a_count(text: str, why: str) -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=why):
        positive_int(text)


def test_the_help_says_each_default_the_service_and_selfplay_use(capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer reads the defaults from --help (they were hidden for these): the figures are the code's own."""
    from clients.cli import main
    from service.config import Limits, ServiceConfig

    limits, config = Limits(), ServiceConfig()
    assert main(["serve", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split()).split("options:", 1)[1]  # (past the usage line)
    for option, default in (("--max-events", str(limits.max_events_per_game)),
                            ("--max-message-bytes", f"{limits.max_message_bytes >> 20} MiB"),
                            ("--max-stream-messages", str(limits.max_stream_messages)),
                            ("--max-record-bytes", f"{limits.max_record_bytes >> 20} MiB"),
                            ("--deadline", f"{limits.deadline_seconds:g}"), ("--grace", f"{config.grace_seconds:g}")):
        part = text.split(option + " ", 1)[1][:200]
        assert f"default {default})" in part, (option, part)
    assert main(["selfplay", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default 8)" in text and "(default 0)" in text and "(default 10)" in text
