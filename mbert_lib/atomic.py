"""Atomic writes: a temp file (or directory) beside the target, then a rename.

A crash, a full disk or Ctrl-C mid-write leaves the old file (or none), never
half a file; the same holds for directories written with `atomic_directory`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yields a temporary path beside `path`; renames it onto `path` on success."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp"
    )
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        yield tmp
        if os.path.exists(tmp):
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual mode
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Writes `text` (UTF-8) to `path` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, overwrite: bool = False):
    """Yields an empty temporary directory beside `path`; renames it onto `path` on success.

    On an exception nothing is left behind. An existing `path` raises
    FileExistsError (before anything is written) unless `overwrite`; with
    `overwrite` the old directory is replaced only once the new one is complete.
    """
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} already exists; choose another path or overwrite it")
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        yield tmp
        if os.path.exists(path):
            old = tempfile.mkdtemp(
                dir=parent, prefix="." + os.path.basename(path) + ".", suffix=".old"
            )
            os.replace(path, os.path.join(old, "previous"))
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
