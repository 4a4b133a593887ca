"""`python -m mbert_lib teacher build`: pre-train the teacher the project ships, and pack it.

1. pre-train `experiments/pretrain_shipped_teacher.yaml` on the data directory
   (resumable: a killed build continues from its last checkpoint);
2. measure it on the held-out documents in float32 and as shipped (float16 weights);
3. pack it into teachers/laptop_ibbert/ (`mbert_lib.train.shipped_teacher`) with its
   record: the command, the settings, the data's fingerprints and the ids of every
   document it trained on (so a run can check its held-out documents are not among
   them), the held-out curve, the hardware and the wall time.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensorflow as tf

from mbert_lib import config_tree
from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.data import make_pretraining_dataset, prepare_data_section
from mbert_lib.data.text import parse_documents
from mbert_lib.experiment import PretrainExperiment, load_experiment
from mbert_lib.hardware import describe
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.evaluation import evaluate_pretrainer
from mbert_lib.train.metrics_io import read_scalars
from mbert_lib.train.pretrain import run_pretraining
from mbert_lib.train.shipped_teacher import (
    SHIPPED_TEACHER_DIR,
    document_ids,
    install_teacher,
    pack_teacher,
)

CONFIG_FILE = "experiments/pretrain_shipped_teacher.yaml"
DEFAULT_WORK_DIR = REPO_ROOT / "runs" / "shipped_teacher"
COMMAND = "python -m mbert_lib teacher build --data-dir DATA"


def build_experiment(data_dir: str, work_dir: Path, config_file: str = CONFIG_FILE):
    """The yaml with the data directory and the data cache under `work_dir`."""
    experiment = load_experiment(REPO_ROOT / config_file, cls=PretrainExperiment)
    return config_tree.apply_overrides(
        experiment,
        [("data.data_dir", str(data_dir)), ("data.cache_dir", str(work_dir / "data"))],
    )


def training_seconds(wall_times: np.ndarray) -> float:
    """Wall time of training from the logged steps' clock times: the sum of the intervals
    between consecutive logs, where a gap longer than 10× the median interval (the run was
    stopped and resumed later) counts as one median interval."""
    gaps = np.diff(np.sort(np.asarray(wall_times, np.float64)))
    if len(gaps) == 0:
        return 0.0
    median = float(np.median(gaps))
    return float(np.where(gaps > 10 * median, median, gaps).sum())


def heldout_curve(model_dir: Path) -> tuple[list[dict], float]:
    """([{step, mlm_accuracy, perplexity, nsp_accuracy}] per evaluation, training seconds)."""
    table = read_scalars(model_dir / "tensorboard")
    held = table[table.split == "eval"].pivot(index="step", columns="tag", values="value")
    tags = [t for t in ("mlm_accuracy", "perplexity", "nsp_accuracy") if t in held]
    curve = [
        {"step": int(step), **{t: float(row[t]) for t in tags}} for step, row in held.iterrows()
    ]
    train = table[(table.split == "train") & (table.tag == "loss")]
    return curve, training_seconds(train["wall_time"].to_numpy())


def build_shipped_teacher(
    data_dir: str,
    out_dir: str | Path = SHIPPED_TEACHER_DIR,
    work_dir: str | Path = DEFAULT_WORK_DIR,
    config_file: str = CONFIG_FILE,
    log: Callable[[str], None] = print,
    show_progress: bool = True,
) -> dict:
    """Runs steps 1-3 of the module docstring; returns the record written."""
    work_dir = Path(work_dir)
    experiment = build_experiment(data_dir, work_dir, config_file)
    model_dir = work_dir / "model"
    done = run_pretraining(experiment, model_dir, show_progress=show_progress, log=log)
    prepared = prepare_data_section(experiment.data, log=log, progress=False)
    corpus = prepared.output_dir / "corpus"
    train_documents = parse_documents((corpus / "train.txt").read_text(encoding="utf-8"))
    heldout_documents = parse_documents((corpus / "heldout.txt").read_text(encoding="utf-8"))
    curve, seconds = heldout_curve(model_dir)

    log("held-out metrics of the float16 weights as shipped ...")
    installed = work_dir / "installed_check"
    pack_teacher(model_dir, work_dir / "packed_check", {"data": {"train_document_ids": []}})
    install_teacher(work_dir / "packed_check", installed)
    float16 = evaluate_heldout(installed, prepared.examples_dir, experiment.trainer.eval_batch_size)

    sources = (corpus / "sources.json").read_text(encoding="utf-8")
    record = {
        "command": COMMAND,
        "config_file": config_file,
        "experiment": dataclasses.asdict(experiment)
        | {"data": dataclasses.asdict(experiment.data) | {"data_dir": "DATA", "cache_dir": None}},
        "data": {
            **_sources_without_paths(sources),
            "train_text_sha256": prepared.manifest["key"]["train_text_sha256"],
            "heldout_text_sha256": prepared.manifest["key"]["heldout_text_sha256"],
            "train_documents": len(train_documents),
            "heldout_documents": len(heldout_documents),
            "train_document_ids": document_ids(train_documents),
        },
        "training": {
            "train_steps": done.get("train_steps"),
            "examples_seen": done.get("train_steps", 0) * experiment.trainer.batch_size,
            "train_examples": prepared.manifest["counts"]["train"],
            "wall_seconds": round(seconds, 1),
            "hardware": done.get("hardware")
            or f"{describe()} (the packing machine; the training run did not record its own)",
            "tensorflow": tf.__version__,
            "finished": done.get("finished_at"),
        },
        "heldout": {"float32": done.get("eval"), "float16": float16, "curve": curve},
    }
    written = pack_teacher(model_dir, out_dir, record)
    log(
        f"packed the teacher into {out_dir}: held-out MLM accuracy "
        f"{100 * done['eval']['mlm_accuracy']:.2f} % (float32), "
        f"{100 * float16['mlm_accuracy']:.2f} % as shipped (float16), "
        f"{sum(f['bytes'] for f in written['files'].values()) / 1e6:.2f} MB"
    )
    return written


def evaluate_heldout(model_dir: Path, examples_dir: Path, batch_size: int) -> dict:
    """The trainer's held-out metrics of a model directory's pre-trainer."""
    arrays = {}
    for batch in make_pretraining_dataset(examples_dir, batch_size, split="eval"):
        for k, v in batch.items():
            arrays.setdefault(k, []).append(v.numpy())
    examples = {k: np.concatenate(v) for k, v in arrays.items()}
    return evaluate_pretrainer(load_pretrainer(model_dir), examples, batch_size)


def _sources_without_paths(sources_json: str) -> dict:
    """corpus/sources.json with each file's name cut to the part under the data directory
    (no path of the machine that built the teacher)."""
    sources = json.loads(sources_json)
    for file in sources.get("files", []):
        parts = Path(file["name"]).parts
        for anchor in ("wikitext-2", "glue"):
            if anchor in parts:
                file["name"] = str(Path(*parts[parts.index(anchor) :]))
    return sources
