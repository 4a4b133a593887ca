"""The lab from start to finish: teacher, five students × seeds, `attention_lab.json`.

Each finished model leaves a small record and its weights under `<out>/attention_lab/`,
so a killed lab resumes with the next student; a record made with other settings is
trained again. `lab_models` reads the models back (for the maps and the explorer).

The students train two at a time, each of two threads with its own model and compiled steps. A
student's numbers do not depend on which thread trains it or what runs beside it: the
XLA-compiled steps split their work by the size of TensorFlow's thread pool, not by the
load (`experiments/lab_student_threads.py`: equal weights bit for bit; the tests compare the tiny
lab's uncompiled students, one thread against two, to float rounding). Two small models
side by side keep both cores busier than one that the pool splits.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import tf_keras

from mbert_lib import atomic, hardware, strict_json
from mbert_lib.config_tree import to_dict
from mbert_lib.distill.initialize import copy_from_teacher
from mbert_lib.lab import variants
from mbert_lib.lab.data import LabExamples, make_examples
from mbert_lib.lab.loop import Stage, StageRunner
from mbert_lib.lab.measure import evaluate
from mbert_lib.lab.settings import LabSettings, lab_settings, student_config, teacher_config
from mbert_lib.models import build_pretrainer, dummy_inputs
from mbert_lib.paired import paired_difference

RESULT_FILE = "attention_lab.json"
WORK_DIR = "attention_lab"
TEACHER_WEIGHTS = "teacher_weights.npz"  # get_weights() in order
# The pairs the lab's verdicts read: each AT student against each student without AT.
COMPARISONS = (
    ("pkt", "no_transfer"),
    ("pkt", "fmt_only"),
    ("pkt", "copy_only"),
    ("at_only", "no_transfer"),
    ("at_only", "fmt_only"),
    ("at_only", "copy_only"),
)


# Settings only the students use: a new value keeps the teacher.
STUDENT_KEYS = ("student_steps", "layer_steps", "student_learning_rate", "at_weight", "seeds")


def settings_fingerprint(settings: LabSettings, teacher_only: bool = False) -> str:
    """sha256 of the settings (of those the teacher depends on, when teacher_only)."""
    values = to_dict(settings)
    if teacher_only:
        values = {k: v for k, v in values.items() if k not in STUDENT_KEYS}
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def built_model(config, seq_length: int):
    """A Pretrainer of `config`, built on a dummy batch of `seq_length`."""
    model = build_pretrainer(config)
    model(dummy_inputs(2, seq_length))
    return model


def _read(path: Path, fingerprint: str) -> dict | None:
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return record if record.get("fingerprint") == fingerprint else None


def _write(path: Path, record: dict) -> None:
    atomic.write_text(path, strict_json.dumps(record, indent=1) + "\n")


def write_weights(path: Path, model) -> None:
    """model.get_weights() in order, as w0, w1, ... in an .npz (written atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **{f"w{i}": w for i, w in enumerate(model.get_weights())})


def read_weights(path: Path) -> list[np.ndarray]:
    with np.load(path) as stored:
        return [stored[f"w{i}"] for i in range(len(stored.files))]


def student_paths(work: Path, variant: str, seed: int) -> tuple[Path, Path]:
    """(record .json, weights .npz) of one finished student."""
    stem = work / "students" / f"{variant}-seed{seed}"
    return stem.with_suffix(".json"), stem.with_suffix(".npz")


class _Curve:
    """Structured accuracy on the first `curve_examples` dev examples at step 0 and every
    `curve_interval` steps of a model's whole training (across its stages)."""

    def __init__(self, model, dev: LabExamples, settings: LabSettings, enabled: bool):
        self.model, self.dev, self.enabled = model, dev, enabled
        self.rows = slice(0, settings.curve_examples)
        self.every = settings.curve_interval
        self.points: list[list[float]] = []
        self.offset = 0  # the steps of the stages before this one
        self._measure(0)

    def _measure(self, step: int) -> None:
        if self.enabled and step % self.every == 0:
            accuracy = evaluate(self.model, self.dev, self.rows)["structured_accuracy"]
            self.points.append([step, round(accuracy, 4)])

    def __call__(self, stage_step: int) -> None:
        self._measure(self.offset + stage_step)


def train_teacher(settings, train, dev, work: Path, fingerprint: str, log) -> tuple:
    """(teacher pretrainer, its record, read back?): pre-trained on the task, or read back."""
    tf_keras.utils.set_random_seed(settings.data_seed)
    teacher = built_model(teacher_config(settings), settings.task.seq_length)
    record = _read(work / "teacher.json", fingerprint)
    weights = work / TEACHER_WEIGHTS
    if record is not None and weights.is_file():
        teacher.set_weights(read_weights(weights))
        log(f"teacher: done ({record['structured_accuracy']:.1%} structured), read back")
        return teacher, record, True
    start = time.perf_counter()
    curve = _Curve(teacher, dev, settings, enabled=True)
    StageRunner(teacher, train.arrays, settings.jit_compile).run_stage(
        Stage("teacher", variants.mlm_loss(teacher)),
        train.rows(settings.batch_size, 0),
        settings.teacher_steps,
        settings.teacher_learning_rate,
        curve,
        every=settings.curve_interval,
    )
    record = {
        "fingerprint": fingerprint,
        **evaluate(teacher, dev),
        "steps": settings.teacher_steps,
        "seconds": round(time.perf_counter() - start, 1),
        "curve": curve.points,
    }
    write_weights(weights, teacher)
    _write(work / "teacher.json", record)
    log(
        f"teacher: {record['structured_accuracy']:.1%} structured after "
        f"{settings.teacher_steps} steps ({record['seconds']:.0f} s)"
    )
    return teacher, record, False


# A student's initialisation per (teacher-only settings fingerprint, seed): every variant
# of a seed starts from the same weights, built once in a process.
_INITIAL: dict[tuple[str, int], list[np.ndarray]] = {}


def initial_weights(settings: LabSettings, seed: int) -> list[np.ndarray]:
    """The weights every student of `seed` starts from."""
    key = (settings_fingerprint(settings, teacher_only=True), seed)
    if key not in _INITIAL:
        tf_keras.utils.set_random_seed(1000 + seed)
        _INITIAL[key] = built_model(
            student_config(settings), settings.task.seq_length
        ).get_weights()
    return _INITIAL[key]


def train_student(variant, seed, teacher, student, runner, settings, train, dev) -> dict:
    """One student of `variant` from seed `seed`'s initialisation: its record.
    `student` is a built model whose weights are replaced."""
    spec = variants.VARIANT_SPECS[variant]
    student.set_weights(initial_weights(settings, seed))
    if spec.copy:
        copy_from_teacher(teacher, student)
    runner.reset()
    before = evaluate(student, dev)
    rows = train.rows(settings.batch_size, 1000 + seed)
    curve = _Curve(student, dev, settings, enabled=seed == 0)
    stages = [
        (layer, variants.layer_loss(student, layer), spec.layer_weights(settings.at_weight))
        for layer in range(settings.num_layers)
        if spec.layer_terms
    ]
    final_steps = settings.student_steps - settings.layer_steps * len(stages)
    stages.append((None, variants.final_loss(student), spec.final_weights(settings.at_weight)))
    start = time.perf_counter()
    for layer, loss_fn, weights in stages:
        steps = settings.layer_steps if layer is not None else final_steps
        stage = Stage(
            variants.stage_key(layer), loss_fn, variants.stage_variables(student, layer), weights
        )
        runner.run_stage(
            stage, rows, steps, settings.student_learning_rate, curve, settings.curve_interval
        )
        curve.offset += steps
    return {
        **evaluate(student, dev),
        "before": before,
        "seconds": round(time.perf_counter() - start, 1),
        "curve": curve.points,
    }


# The lab's aims: a teacher that solves the task, students with AT that learn it in their
# budget, students without AT that do not.
TEACHER_AIM, AT_AIM, WITHOUT_AT_AIM = 0.95, 0.90, 0.60


def _targets(teacher_accuracy: float, accuracy: dict, paired: dict) -> dict:
    mean = {v: float(np.mean(a)) for v, a in accuracy.items()}
    without_at = [v for v in variants.VARIANTS if v not in variants.AT_VARIANTS]
    return {
        "teacher": {"aim": TEACHER_AIM, "met": teacher_accuracy >= TEACHER_AIM},
        "with_at": {"aim": AT_AIM, "met": all(mean[v] >= AT_AIM for v in variants.AT_VARIANTS)},
        "without_at": {
            "aim": WITHOUT_AT_AIM,
            "met": all(mean[v] <= WITHOUT_AT_AIM for v in without_at),
        },
        "gaps_beyond_2se": {
            name: d["se"] > 0 and d["mean"] > 2 * d["se"] for name, d in paired.items()
        },
    }


def _summary(settings, teacher_record, students, seconds, resumed, data) -> dict:
    mass = np.array(teacher_record["rule_attention_mass"])  # [L, N]
    layer, head = (int(i) for i in np.unravel_index(np.argmax(mass), mass.shape))
    per_seed = {v: [students[v][s] for s in range(settings.seeds)] for v in variants.VARIANTS}
    accuracy = {v: [r["structured_accuracy"] for r in runs] for v, runs in per_seed.items()}
    paired = {
        f"{a} - {b}": paired_difference(accuracy[a], accuracy[b]).to_dict() for a, b in COMPARISONS
    }
    return {
        "task": settings.task.name,
        "chance": settings.task.chance,
        "teacher": {
            "structured_accuracy": teacher_record["structured_accuracy"],
            "other_accuracy": teacher_record["other_accuracy"],
            "steps": teacher_record["steps"],
            "seconds": teacher_record["seconds"],  # when it was trained
            "curve": teacher_record["curve"],
        },
        "students": accuracy,
        "other_accuracy": {v: [r["other_accuracy"] for r in runs] for v, runs in per_seed.items()},
        "rule_head": {"layer": layer, "head": head},
        "rule_attention_mass": {
            "teacher": float(mass[layer, head]),
            "before_transfer": [
                r["before"]["rule_attention_mass"][layer][head] for r in per_seed["pkt"]
            ],
            **{
                v: [r["rule_attention_mass"][layer][head] for r in runs]
                for v, runs in per_seed.items()
            },
        },
        "rule_attention_mass_per_head": {
            "teacher": teacher_record["rule_attention_mass"],
            "before_transfer": per_seed["pkt"][0]["before"]["rule_attention_mass"],
            **{v: runs[0]["rule_attention_mass"] for v, runs in per_seed.items()},
        },
        "curves": {v: runs[0]["curve"] for v, runs in per_seed.items()},
        "paired": paired,
        "targets": _targets(teacher_record["structured_accuracy"], accuracy, paired),
        "settings": to_dict(settings),
        "student_steps": settings.student_steps,
        "student_seconds": {v: [r["seconds"] for r in runs] for v, runs in per_seed.items()},
        "seconds": round(seconds, 1),  # this invocation's wall time (less when it resumed)
        "resumed": resumed,
        "data": data,  # sha256 of what generated each split (StructuredTask.fingerprint)
        "hardware": hardware.describe(),
    }


def _done(variant: str, seed: int, record: dict, how: str = "") -> str:
    seconds = f"{record['seconds']:.0f} s" + (f", {how}" if how else "")
    return f"{variant} seed {seed}: {record['structured_accuracy']:.1%} structured ({seconds})"


def run_lab(
    settings: LabSettings, out_dir, log: Callable[[str], None] = print, student_threads: int = 2
) -> dict:
    """Runs (or resumes) the lab into out_dir, training `student_threads` students at a
    time; returns what it wrote to attention_lab.json."""
    out_dir = Path(out_dir)
    work = out_dir / WORK_DIR
    fingerprint = settings_fingerprint(settings)
    start = time.perf_counter()
    train, dev = make_examples(settings, "train"), make_examples(settings, "dev")
    teacher_print = settings_fingerprint(settings, teacher_only=True)
    teacher, teacher_record, resumed = train_teacher(settings, train, dev, work, teacher_print, log)
    train = dataclasses.replace(
        train,
        arrays={
            **train.arrays,
            **variants.teacher_targets(teacher, train.arrays, settings.num_layers),
        },
    )
    students: dict[str, dict[int, dict]] = {v: {} for v in variants.VARIANTS}
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for variant in variants.VARIANTS:
        for seed in range(settings.seeds):
            path, weights = student_paths(work, variant, seed)
            record = _read(path, fingerprint) if weights.is_file() else None
            if record is None:
                todo.put((variant, seed))
            else:
                resumed = True
                students[variant][seed] = record
                log(_done(variant, seed, record, "read back"))
    for seed in range(settings.seeds):
        initial_weights(settings, seed)  # seeds Keras's global generator: not in a thread
    failed = threading.Event()

    def worker(student, runner: StageRunner) -> None:
        while not failed.is_set():
            try:
                variant, seed = todo.get_nowait()
            except queue.Empty:
                return
            try:
                record = {
                    "fingerprint": fingerprint,
                    **train_student(variant, seed, teacher, student, runner, settings, train, dev),
                }
            except BaseException:
                failed.set()
                raise
            path, weights = student_paths(work, variant, seed)
            write_weights(weights, student)  # before the record that marks it done
            _write(path, record)
            students[variant][seed] = record
            log(_done(variant, seed, record))

    seq_length = settings.task.seq_length
    models = [built_model(student_config(settings), seq_length) for _ in range(student_threads)]
    with ThreadPoolExecutor(len(models)) as pool:
        running = [
            pool.submit(worker, m, StageRunner(m, train.arrays, settings.jit_compile))
            for m in models
        ]
        for thread in running:
            thread.result()
    summary = _summary(
        settings,
        teacher_record,
        students,
        time.perf_counter() - start,
        resumed,
        {"train": train.fingerprint, "dev": dev.fingerprint},
    )
    summary["student_threads"] = student_threads  # students trained side by side
    _write(out_dir / RESULT_FILE, summary)
    return summary


def lab_models(out_dir, seed: int = 0) -> tuple[LabSettings, dict]:
    """(settings, models) of a finished lab in out_dir: "teacher", "before transfer" (seed
    `seed`'s initial student with the teacher's embedding and MLM head copied, as every
    copying student starts) and each variant's finished student of that seed, by name
    in VARIANTS order. Raises FileNotFoundError naming what is missing."""
    out_dir = Path(out_dir)
    result = out_dir / RESULT_FILE
    if not result.is_file():
        raise FileNotFoundError(
            f"{result} does not exist: run python -m mbert_lib reproduce --recipe "
            f"attention_lab --out {out_dir}"
        )
    settings = lab_settings(json.loads(result.read_text(encoding="utf-8"))["settings"])
    if not 0 <= seed < settings.seeds:
        raise ValueError(f"seed must be in 0..{settings.seeds - 1}, got {seed}")
    work, seq_length = out_dir / WORK_DIR, settings.task.seq_length
    teacher = built_model(teacher_config(settings), seq_length)
    teacher.set_weights(read_weights(work / TEACHER_WEIGHTS))
    before = built_model(student_config(settings), seq_length)
    before.set_weights(initial_weights(settings, seed))
    copy_from_teacher(teacher, before)
    models = {"teacher": teacher, "before transfer": before}
    for variant in variants.VARIANTS:
        weights = student_paths(work, variant, seed)[1]
        if not weights.is_file():
            raise FileNotFoundError(f"{weights} does not exist: the lab has not kept this student")
        models[variant] = built_model(student_config(settings), seq_length)
        models[variant].set_weights(read_weights(weights))
    return settings, models
