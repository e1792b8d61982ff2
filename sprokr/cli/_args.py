"""Argument types and checks shared by the commands (parsed values refused at parse time)."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1 (``--top-k``): argparse reports anything else as a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (>= 1), got {value}")
    return value


def open_fraction(text: str) -> float:
    """A float strictly between 0 and 1 (``--validation-fraction``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text}")
    return value


class UsageError(ValueError):
    """Options that do not go together (reported like any error: one line, exit code 2)."""
