"""The run directory every trainer writes, and the two ends of its life.

    <model_dir>/experiment.yaml     the settings it trains with (run_record.py)
    <model_dir>/.lock               held while one process writes (mbert_lib.run_lock)
    <model_dir>/checkpoints/        resumable state (checkpointing.RunCheckpoint)
    <model_dir>/done.json           the last file written: the run's result

Pre-training, distillation and fine-tuning all start with `finished_run` (is it
the same run, and is it done?) and write inside `writing_run` (the lock and the
experiment record, on the chief only), through `TrainingRun.writing` (run.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator

from mbert_lib.run_lock import run_lock
from mbert_lib.train.checkpointing import read_done
from mbert_lib.train.run_record import check_same_run, holds_checkpoints, record_experiment


def finished_run(
    experiment,
    model_dir: str | os.PathLike,
    *,
    train_steps: int | None,
    fixed: Callable[[str], bool],
    describe: Callable[[dict], str],
    log: Callable[[str], None] = print,
) -> dict | None:
    """The done record of a finished run of `experiment` in model_dir (logged as
    "already done: <describe(done)>; nothing to do"), or None when there is training to do.

    train_steps: the steps asked for (a run that finished at least as many is done); None:
    any done marker counts. Refuses, naming the fields, a directory that holds another run
    (run_record.check_same_run, `fixed` as there).
    """
    done = read_done(model_dir)
    finished = done is not None and (
        train_steps is None or int(done.get("train_steps", -1)) >= train_steps
    )
    check_same_run(experiment, model_dir, finished=finished, fixed=fixed, log=log)
    if not finished:
        return None
    log(f"already done: {os.fspath(model_dir)} {describe(done)}; nothing to do")
    return done


def _new_directories(model_dir: str) -> str | None:
    """The topmost directory of model_dir's path that does not exist yet (what a run there
    creates, parents included), or None when model_dir exists."""
    path = os.path.abspath(model_dir)
    if os.path.exists(path):
        return None
    while not os.path.exists(os.path.dirname(path)):
        path = os.path.dirname(path)
    return path


def _remove_new_run(model_dir: str, top: str) -> None:
    """Removes model_dir and then its parents up to `top` that are left empty."""
    shutil.rmtree(model_dir, ignore_errors=True)
    path, top = os.path.dirname(os.path.abspath(model_dir)), os.path.abspath(top)
    while path.startswith(top):
        try:
            os.rmdir(path)
        except OSError:  # not empty: something else lives there now
            return
        path = os.path.dirname(path)


@contextlib.contextmanager
def writing_run(experiment, model_dir: str | os.PathLike, chief: bool = True) -> Iterator[None]:
    """While a trainer writes model_dir: its lock held and its experiment recorded.

    Only the chief takes the lock and writes the record: under a multi-worker strategy
    the other workers write to scratch directories of their own. A run that fails in a
    directory it created, before its first checkpoint, removes that directory again (its
    lock, its experiment record, its logs): there is nothing in it to resume.
    """
    model_dir = os.fspath(model_dir)
    new = _new_directories(model_dir) if chief else None
    with run_lock(model_dir, "--model_dir") if chief else contextlib.nullcontext():
        try:
            if chief:
                record_experiment(experiment, model_dir)
            yield
        except BaseException:
            if new is not None and not holds_checkpoints(model_dir):
                _remove_new_run(model_dir, new)
            raise
