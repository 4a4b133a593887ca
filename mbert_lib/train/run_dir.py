"""The run directory every trainer writes, and the two ends of its life.

    <model_dir>/experiment.yaml     the settings it trains with (run_record.py)
    <model_dir>/.lock               held while one process writes (mbert_lib.run_lock)
    <model_dir>/checkpoints/        resumable state (checkpointing.RunCheckpoint)
    <model_dir>/done.json           the last file written: the run's result

Pre-training, distillation and fine-tuning all start with `finished_run` (is it
the same run, and is it done?) and write inside `writing_run` (the lock and the
experiment record, on the chief only); between the two each builds its model,
optimizer and `run_loop` (loop.py), and it ends with `write_done`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from mbert_lib.run_lock import run_lock
from mbert_lib.train.checkpointing import read_done
from mbert_lib.train.run_record import check_same_run, record_experiment


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


@contextlib.contextmanager
def writing_run(experiment, model_dir: str | os.PathLike, chief: bool = True) -> Iterator[None]:
    """While a trainer writes model_dir: its lock held and its experiment recorded.

    Only the chief takes the lock and writes the record: under a multi-worker strategy
    the other workers write to scratch directories of their own.
    """
    model_dir = os.fspath(model_dir)
    with run_lock(model_dir, "--model_dir") if chief else contextlib.nullcontext():
        if chief:
            record_experiment(experiment, model_dir)
        yield
