"""Command-line entry point: one module per (sub)command in this package.

A module `mbert_lib/cli/<command>.py` becomes `python -m mbert_lib <command>`;
`mbert_lib/cli/<command>_<sub>.py` becomes `python -m mbert_lib <command> <sub>`.
Each module defines:

    HELP: str                                  one line for --help
    def add_arguments(parser) -> None          its flags (argparse)
    def run(args) -> int                       exit status
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import sys
from pathlib import Path


class CommandError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def _commands() -> dict[str, dict[str | None, object]]:
    """{command: {subcommand or None: module}} from this package's modules."""
    table: dict[str, dict[str | None, object]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        command, _, sub = info.name.partition("_")
        module = importlib.import_module(f"{__name__}.{info.name}")
        table.setdefault(command, {})[sub or None] = module
    return table


def build_parser() -> argparse.ArgumentParser:
    # `mbert` (the console script) or `python -m mbert_lib`: the help names the one in use
    prog = "mbert" if Path(sys.argv[0]).name == "mbert" else "python -m mbert_lib"
    parser = argparse.ArgumentParser(prog=prog, description="MobileBERT, step by step.")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    for command, subs in sorted(_commands().items()):
        if list(subs) == [None]:
            module = subs[None]
            p = commands.add_parser(command, help=module.HELP, description=module.HELP)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
            continue
        group = commands.add_parser(
            command, help=f"{command} subcommands: " + ", ".join(sorted(s for s in subs if s))
        )
        subparsers = group.add_subparsers(dest="subcommand", metavar="<subcommand>", required=True)
        for sub, module in sorted(subs.items(), key=lambda kv: kv[0] or ""):
            p = subparsers.add_parser(sub, help=module.HELP, description=module.HELP)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def _disk_full(error: Exception) -> str | None:
    """The one-line report of a full disk (an OSError or TensorFlow's error), else None."""
    # on use: the pipeline package loads TensorFlow, which --help must not
    from mbert_lib.pipeline.checks import is_disk_full

    if not is_disk_full(error):
        return None
    lines = str(error).splitlines()  # TensorFlow's text can run to many lines
    where = getattr(error, "filename", None) or next(
        (line.strip() for line in lines if os.strerror(errno.ENOSPC) in line), " ".join(lines)
    )
    return (
        f"disk full ({where}). Nothing was half-written (files are written to a temporary "
        "name, then renamed): free some space and run the same command again; a training "
        "run resumes from its last checkpoint"
    )


def _os_error(error: OSError) -> str:
    """The one-line report of a read-only or full disk, a permission, a file in the way."""
    where = f"{error.filename}: " if error.filename else ""
    if error.errno == errno.EEXIST and error.filename and os.path.isfile(error.filename):
        return f"{error.filename} is a file; expected a directory there (or choose another path)"
    if error.errno == errno.ENOTDIR and error.filename:
        return f"{where}a part of this path is a file; expected directories (or choose another)"
    return (
        f"{where}{error.strerror or error} (is it writable, with space left? Or choose "
        "another directory)"
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (CommandError, ValueError, FileNotFoundError, FloatingPointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: finished work is kept; run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    except Exception as e:  # a full disk (OSError or TensorFlow's), a read-only one, ...
        message = _disk_full(e) or (_os_error(e) if isinstance(e, OSError) else None)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
