"""Is it the same run? One check for every trainer, against the experiment a run recorded.

Each trainer (pre-training, distillation, fine-tuning) records its experiment
in `model_dir/experiment.yaml` before it trains. Asked to run in a directory
that already holds a record, `check_same_run` decides:

    finished run        same training settings: "already done" (the caller says so);
                        other training settings: refused, naming the fields
    unfinished run      settings that fix what is trained (`fixed`) changed: refused;
      with checkpoints  others (logging, the runtime, ...): continued, with a note
    a record and no     an attempt that failed before its first checkpoint:
      checkpoint        nothing to protect, the new settings replace it, with a note

Settings that never change what a run trained are UNTRAINED_SETTINGS: how it
was logged, saved, evaluated or run, where its prepared data is cached (the cache is
keyed by the data's content), and `trainer.train_steps` (a finished run
asked for fewer steps is done; asked for more, it is not finished).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import yaml

from mbert_lib.config_tree import changed_keys, from_dict, save_yaml

EXPERIMENT_FILE = "experiment.yaml"

UNTRAINED_SETTINGS = (
    "description",
    "data.cache_dir",
    "runtime.",
    "trainer.log_interval",
    "trainer.eval_",
    "trainer.checkpoint_interval",
    "trainer.max_checkpoints_to_keep",
    "trainer.jit_compile",
    "trainer.train_steps",
)


def trained_setting(key: str) -> bool:
    """True for a dotted key that changes what a run trains."""
    return not key.startswith(UNTRAINED_SETTINGS)


def recorded_experiment(cls, model_dir: str | os.PathLike):
    """The `cls` experiment recorded in model_dir/experiment.yaml, or None if there is none."""
    path = os.path.join(os.fspath(model_dir), EXPERIMENT_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return from_dict(cls, yaml.safe_load(f))
    except (yaml.YAMLError, ValueError, TypeError) as e:
        raise ValueError(
            f"{path}: the run record of this directory cannot be read ({e}); "
            "use another --model_dir, or delete it to start again"
        ) from None


def holds_checkpoints(model_dir: str | os.PathLike) -> bool:
    """True if any checkpoint (a `*.index` file) was written anywhere under model_dir."""
    return any(
        name.endswith(".index") for _, _, names in os.walk(os.fspath(model_dir)) for name in names
    )


def check_same_run(
    experiment,
    model_dir: str | os.PathLike,
    *,
    finished: bool,
    fixed: Callable[[str], bool],
    log: Callable[[str], None] = print,
) -> None:
    """Refuses to mix `experiment` with the different run recorded in model_dir (see above).

    `finished`: model_dir's done marker covers what is asked; `fixed(key)`: True
    for the dotted keys an unfinished run must not change when it resumes.
    """
    model_dir = os.fspath(model_dir)
    previous = recorded_experiment(type(experiment), model_dir)
    if previous is None:
        return
    path = os.path.join(model_dir, EXPERIMENT_FILE)
    changed = changed_keys(previous, experiment)
    if finished:
        trained = [k for k in changed if trained_setting(k)]
        if trained:
            raise ValueError(
                f"{model_dir} holds a finished run of other settings ({path}); "
                f"changed: {trained}. Use another --model_dir, or delete it to "
                "train again."
            )
        return
    if not changed:
        return
    if not holds_checkpoints(model_dir):
        log(
            f"note: {path} is from an attempt that saved no checkpoint; starting afresh with "
            f"the changed settings {changed}"
        )
        return
    blocking = [k for k in changed if fixed(k)]
    if blocking:
        raise ValueError(
            f"{model_dir} holds an unfinished run of other settings ({path}); "
            f"changed: {blocking}. Run it with its own settings to resume, use "
            "another --model_dir, or delete it to start again."
        )
    log(f"note: continuing {model_dir} with changed settings: {changed}")
    if "trainer.train_steps" in changed:
        log(
            f"note: trainer.train_steps changed from {previous.trainer.train_steps} to "
            f"{experiment.trainer.train_steps}: the learning-rate schedule is laid over the "
            "new length from here on, so the steps done so far followed the old schedule and "
            "the result differs from a run of the new length from the start"
        )


def record_experiment(experiment, model_dir: str | os.PathLike) -> None:
    """Writes model_dir/experiment.yaml (atomically): the settings this run trains with."""
    save_yaml(experiment, os.path.join(os.fspath(model_dir), EXPERIMENT_FILE))
