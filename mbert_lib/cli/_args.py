"""Argument types the commands share: argparse reports a bad value naming its flag, exit 2."""

from __future__ import annotations

import argparse
import os


def positive_int(text: str) -> int:
    """An integer >= 1 (a batch size, a sequence length, a repeat count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (untimed warm-up steps)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def output_file(text: str) -> str:
    """A file to write: not a directory (nor a path ending in a separator); its parent is
    created when the file is written."""
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"expected a file to write, got the directory {text!r}")
    return text


def check_seq_length(seq_length: int, configs: dict, flag: str = "--seq_length") -> None:
    """ValueError unless seq_length fits every config's max_position_embeddings
    (`configs`: name -> MobileBertConfig)."""
    for name, config in configs.items():
        if seq_length > config.max_position_embeddings:
            raise ValueError(f"{flag} {seq_length} exceeds {name}'s max_position_embeddings "
                             f"({config.max_position_embeddings})")
