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
