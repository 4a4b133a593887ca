"""One run per directory: an exclusive lock on OUT/.lock while steps are being run.

Two `reproduce` runs into one directory would train the same steps into the same
files. The first takes an exclusive `flock` on OUT/.lock (holding its pid, host and
start time) for as long as it runs steps; a second is refused with a RunLockedError
naming the holder. The operating system drops the lock when its process ends, so
a killed run leaves nothing to clean up; a run with nothing left to do (every step
done: what a notebook's `ensure` mostly finds) reads the records without the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path
from typing import Iterator

LOCK_FILE = ".lock"


class RunLockedError(ValueError):
    """Another process is running steps in the same directory (a ValueError, as every
    pipeline error the command line reports in one line)."""


@contextlib.contextmanager
def run_lock(out_dir: Path) -> Iterator[None]:
    """Holds OUT/.lock for the block; RunLockedError if another process holds it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / LOCK_FILE
    with open(path, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "a process that did not say which"
            raise RunLockedError(
                f"{out_dir} is in use by another run ({holder}): wait for it to finish, "
                "or give this one another output directory (--out)") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} on {socket.gethostname()}, started "
                f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)
