"""Argument types and flags the commands share: argparse reports a bad value naming its
flag, exit 2."""

from __future__ import annotations

import argparse
import os
import tempfile


def _int_at_least(minimum: int, expected: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        return value

    return parse


positive_int = _int_at_least(1, "a positive integer")  # a batch size, a length, repeats
nonnegative_int = _int_at_least(0, "an integer >= 0")  # untimed warm-up steps


def output_file(text: str) -> str:
    """A file to write: not a directory (nor a path ending in a separator); its parent is
    created when the file is written, in a place that takes files now (a read-only or
    full disk is found before the work whose results the file would hold)."""
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"expected a file to write, got the directory {text!r}")
    _check_writable(os.path.dirname(os.path.abspath(text)), text)
    return text


def _check_writable(directory: str, text: str) -> None:
    """ArgumentTypeError unless a file can be made in `directory`, or in its nearest existing
    parent when it does not exist yet: tried with an unnamed temporary file, gone at once."""
    while not os.path.exists(directory):
        directory = os.path.dirname(directory)
    if not os.path.isdir(directory):
        raise argparse.ArgumentTypeError(
            f"expected a file to write, got {text!r}: {directory} in its path is a file"
        )
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: {directory} does not take files ({e.strerror}); "
            "choose a writable place"
        ) from None


class _Renamed(argparse.Action):
    """A flag that has a new name: not in --help; given, it stops at once (exit 2) naming
    the new one, whatever value follows it."""

    def __init__(self, option_strings, dest, renamed_to: str, **kwargs):
        self.renamed_to = renamed_to
        kwargs.update(nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was renamed {self.renamed_to}")


def add_recipe_argument(parser, help: str) -> None:
    """--recipe (the pipeline's recipe, experiments/recipes/<name>.yaml; default
    laptop), and its former name --preset, which only says it was renamed."""
    parser.add_argument("--recipe", default="laptop", help=help)
    parser.add_argument("--preset", action=_Renamed, renamed_to="--recipe")


def check_seq_length(seq_length: int, configs: dict, flag: str = "--seq_length") -> None:
    """ValueError unless seq_length fits every config's max_position_embeddings
    (`configs`: name -> MobileBertConfig)."""
    for name, config in configs.items():
        if seq_length > config.max_position_embeddings:
            raise ValueError(
                f"{flag} {seq_length} exceeds {name}'s max_position_embeddings "
                f"({config.max_position_embeddings})"
            )


def check_predictions(args) -> None:
    """ValueError unless --max_predictions_per_seq fits in --seq_length."""
    if args.max_predictions_per_seq > args.seq_length:
        raise ValueError(
            f"--max_predictions_per_seq ({args.max_predictions_per_seq}) exceeds "
            f"--seq_length ({args.seq_length})"
        )
