"""What the pipeline checks before and while it runs: the data directory, a full disk.

Both end in a PipelineError that says what is wrong and what to do; a run
stopped by either resumes where it stopped once the cause is fixed (finished
steps are skipped, a half-done step restarts from its last checkpoint).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from mbert_lib.data import glue, wikitext
from mbert_lib.step_records import PipelineError

# OSError numbers of a full disk or an exhausted quota.
_DISK_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
# How TensorFlow's file system reports ENOSPC (tf.errors.ResourceExhaustedError text).
_DISK_FULL_TEXT = os.strerror(errno.ENOSPC)  # "No space left on device"


def expected_layout() -> str:
    """The files a local data directory must hold, relative to it, as the loaders look for
    them: WikiText-2 text (any split, any layout) and GLUE SST-2 train.tsv + dev.tsv."""

    wiki = [
        str(p)
        for split in wikitext.SPLITS
        for p in wikitext.local_candidates(Path("."), "wikitext-2", split)
    ]
    sst2 = [f"{{glue/SST-2 or SST-2}}/{glue.SPLIT_FILES[s]}" for s in ("train", "dev")]
    return f"WikiText-2 text (one of {', '.join(wiki)}) and GLUE SST-2 ({' and '.join(sst2)})"


def check_data_dir(path: str | os.PathLike) -> str:
    """`path` if it is a readable directory with WikiText-2 and SST-2 files, else PipelineError.

    The message names the directory and every file the loaders look for.
    """

    directory = Path(path)
    if not directory.is_dir():
        raise PipelineError(
            f"data directory {directory} does not exist or is not a directory; "
            f"expected a directory holding {expected_layout()}"
        )
    if not os.access(directory, os.R_OK | os.X_OK):
        raise PipelineError(
            f"data directory {directory} is not readable (permission denied); "
            f"expected a readable directory holding {expected_layout()}"
        )
    wiki = [
        p
        for split in wikitext.SPLITS
        for p in wikitext.local_candidates(directory, "wikitext-2", split)
    ]
    missing = []
    if not any(p.is_file() for p in wiki):
        missing.append("WikiText-2: none of " + ", ".join(map(str, wiki)))
    sst2_dirs = [directory / "glue" / "SST-2", directory / "SST-2"]
    sst2 = next((d for d in sst2_dirs if d.is_dir()), None)
    needed = [glue.SPLIT_FILES[s] for s in ("train", "dev")]
    if sst2 is None or not all((sst2 / f).is_file() for f in needed):
        missing.append(
            "GLUE SST-2: " + " or ".join(f"{d}/{{{','.join(needed)}}}" for d in sst2_dirs)
        )
    unreadable = [
        str(p)
        for p in wiki + [d / f for d in sst2_dirs for f in needed]
        if p.is_file() and not os.access(p, os.R_OK)
    ]
    if missing or unreadable:
        problems = ["missing " + m for m in missing] + [
            f"not readable: {', '.join(unreadable)}"
        ] * bool(unreadable)
        raise PipelineError(
            f"data directory {directory} is not usable: "
            + "; ".join(problems)
            + " (the layout of ../shared/data; see its README.md)"
        )
    return str(directory)


def is_disk_full(error: BaseException) -> bool:
    """True for an OSError ENOSPC/EDQUOT, or TensorFlow's report of one (by its text)."""
    if isinstance(error, OSError) and error.errno in _DISK_FULL_ERRNOS:
        return True
    return type(error).__module__.startswith("tensorflow") and _DISK_FULL_TEXT in str(error)


def disk_full_message(step: str, out_dir: os.PathLike, error: BaseException) -> str:
    """What a full disk during `step` means and how to resume."""
    where = getattr(error, "filename", None) or f"under {out_dir}"
    return (
        f"disk full while step {step!r} was writing ({where}): {error}. Nothing was "
        f"half-written (files are written to a temporary name, then renamed). Free space "
        f"on the disk holding {out_dir} and run the same command again: finished steps "
        f"are skipped and {step!r} resumes from its last checkpoint."
    )
