"""One writer per run directory: an exclusive lock on DIR/.lock while a run writes there.

Two runs into one directory would train the same steps into the same files.
The first takes an exclusive `flock` on DIR/.lock (holding its pid, host and
start time) for as long as it writes; a second is refused with a RunLockedError
naming the holder. The operating system drops the lock when its process ends,
so a killed run leaves nothing to clean up and the next one simply takes it.

Taken by `reproduce` on its output directory while steps are pending (a run
with every step done, what a notebook's `ensure` mostly finds, only reads) and
by the pre-training, distillation and fine-tuning trainers on their model_dir
(on the chief only: other workers write to their own scratch directories).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = ".lock"


class RunLockedError(ValueError):
    """Another process is writing to the same directory (a ValueError, as every
    error the command line reports in one line)."""


def _check_not_a_file(out_dir: Path, flag: str) -> None:
    """ValueError when out_dir, or the nearest of its parents that exists, is a file."""
    path = out_dir
    while not path.exists() and path != path.parent:
        path = path.parent
    if path.exists() and not path.is_dir():
        what = "is a file" if path == out_dir else f"is inside {path}, which is a file"
        raise ValueError(
            f"{flag} {out_dir} {what}; expected a directory (a new one, or one this command "
            "wrote before)"
        )


@contextlib.contextmanager
def run_lock(out_dir: str | os.PathLike, flag: str = "--out", wait: float = 0.0) -> Iterator[None]:
    """Holds DIR/.lock for the block; RunLockedError if another process holds it for
    longer than `wait` seconds (0: refused at once; a data cache that another run is
    reading waits its turn, seconds when nothing is to be written).

    `flag`: the option that names the directory, for the message.
    """
    out_dir = Path(out_dir)
    _check_not_a_file(out_dir, flag)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / LOCK_FILE
    deadline = time.monotonic() + wait
    with open(path, "a+", encoding="utf-8") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                f.seek(0)
                holder = f.read().strip() or "a process that did not say which"
                raise RunLockedError(
                    f"{out_dir} is in use by another run ({holder}): wait for it to finish, "
                    f"or give this one another directory ({flag})"
                ) from None
        f.seek(0)
        f.truncate()
        f.write(
            f"pid {os.getpid()} on {socket.gethostname()}, started "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        )
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)
