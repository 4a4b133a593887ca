"""The pre-training steps of `python -m mbert_lib reproduce` (data, teacher): thin glue
from a recipe's settings (experiments/recipes/<recipe>.yaml) to the library
function that does the work.

The teacher is the shipped one (installed from teachers/, its vocabulary tokenizing the
data) or one pre-trained here (`teacher.source`; mbert_lib/pipeline/teacher_choice.py).
Other step modules (distillation, fine-tuning, export, report) follow the same shape;
pipeline/registry.py puts them in order.

Trainer steps name an experiment yaml in experiments/ and dotted overrides
of it; the data step's settings are also applied to every trainer that
reads pre-training data (`data_overrides`).
"""

from __future__ import annotations

import dataclasses
import functools
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.config_tree import apply_overrides
from mbert_lib.data import glue, make_pretraining_dataset, prepare_data_section, wikitext
from mbert_lib.data.provenance import sha256_file
from mbert_lib.data.text import parse_documents
from mbert_lib.experiment import DataSection, PretrainExperiment, load_experiment
from mbert_lib.pipeline.core import Context, PipelineError, Step
from mbert_lib.pipeline.teacher_choice import shipped_dir
from mbert_lib.runtime import REPO_ROOT
from mbert_lib.train.evaluation import evaluate_pretrainer
from mbert_lib.train.pretrain import run_pretraining
from mbert_lib.train.shipped_teacher import (
    check_vocabulary,
    heldout_overlap,
    install_teacher,
    read_teacher_record,
)


def _source(ctx: Context) -> str:
    return "local" if ctx.data_dir else "builtin"


# The data step's settings: the fields of an experiment's `data` section it sets.
DATA_FIELDS = ("vocab_size", "seq_length", "max_predictions_per_seq", "dupe_factor", "seed")


def shipped_teacher(ctx: Context) -> bool:
    return ctx.settings["teacher"].get("source") == "shipped"


def data_section(ctx: Context) -> DataSection:
    """The `data` section the data step prepares: its settings, the run's source, and the
    step's directory as the cache; every trainer that reads pre-training data gets it.
    With the shipped teacher, its vocabulary (and so its size) replaces a trained one."""
    settings = ctx.settings["data"]
    section = DataSection(
        source=_source(ctx),
        data_dir=ctx.data_dir,
        cache_dir=str(ctx.step_dir("data")),
        **{name: settings[name] for name in DATA_FIELDS},
    )
    if shipped_teacher(ctx):
        vocab = settings["vocab"]["shipped_teacher"]
        section = dataclasses.replace(
            section,
            vocab_file=str(shipped_dir(ctx.settings["teacher"]) / "vocab.txt"),
            vocab_size=vocab["vocab_size"],
            lower_case=vocab["do_lower_case"],
        )
    return section


def data_overrides(ctx: Context) -> list[tuple[str, Any]]:
    """`data_section(ctx)` as overrides of a trainer experiment (and the model's vocabulary
    size, which must match the data's)."""
    section = data_section(ctx)
    fields = ("source", "data_dir", "cache_dir", "vocab_file", "lower_case", *DATA_FIELDS)
    return [(f"data.{name}", getattr(section, name)) for name in fields] + [
        ("model.overrides.vocab_size", section.vocab_size)
    ]


def load_step_experiment(ctx: Context, settings: Mapping[str, Any], cls=None):
    """The experiment yaml a trainer step names, with data and step overrides applied."""
    path = REPO_ROOT / settings["config_file"]
    experiment = load_experiment(path, cls=cls or PretrainExperiment)
    return apply_overrides(experiment, data_overrides(ctx) + list(settings["overrides"].items()))


def run_data(ctx: Context, settings: Mapping[str, Any]) -> dict:

    prepared = prepare_data_section(data_section(ctx), log=ctx.log, progress=ctx.show_progress)
    if shipped_teacher(ctx):
        record = read_teacher_record(shipped_dir(ctx.settings["teacher"]))
        held = parse_documents(
            (prepared.output_dir / "corpus" / "heldout.txt").read_text(encoding="utf-8")
        )
        seen = heldout_overlap(record, held)
        if seen:
            raise PipelineError(
                f"the shipped teacher was pre-trained on {seen} of this run's {len(held)} "
                "held-out documents: its held-out MLM accuracy, and every comparison with "
                "it, would be inflated. Hold out other documents, or pre-train a teacher on "
                "this data (reproduce --teacher trained)"
            )
        ctx.log(f"none of the {len(held)} held-out documents is among the teacher's training set")
    return {
        "source": _source(ctx),
        "data_dir": ctx.data_dir,
        "examples_dir": str(prepared.examples_dir),
        "tokenizer_dir": str(prepared.tokenizer_dir),
        "counts": prepared.manifest.get("counts"),
    }


def run_teacher(ctx: Context, settings: Mapping[str, Any]) -> dict:

    if settings.get("source") == "shipped":
        return _install_shipped(ctx, settings)
    experiment = load_step_experiment(ctx, settings)
    done = run_pretraining(
        experiment, ctx.step_dir("teacher"), show_progress=ctx.show_progress, log=ctx.log
    )
    return {
        "model_dir": str(ctx.step_dir("teacher")),
        "eval": done.get("eval"),
        "train_steps": done.get("train_steps"),
        "source": "trained",
    }


def _install_shipped(ctx: Context, settings: Mapping[str, Any]) -> dict:
    """The shipped teacher installed as the step's model directory, checked against the run's
    tokenizer and measured on the run's held-out examples."""
    model_dir = ctx.step_dir("teacher")
    record = read_teacher_record(shipped_dir(settings))
    check_vocabulary(record, ctx.result("data")["tokenizer_dir"], "the run's tokenizer")
    install_teacher(shipped_dir(settings), model_dir)
    arrays: dict = {}
    for batch in make_pretraining_dataset(ctx.result("data")["examples_dir"], 64, split="eval"):
        for key, value in batch.items():
            arrays.setdefault(key, []).append(value.numpy())
    examples = {k: np.concatenate(v) for k, v in arrays.items()}
    metrics = evaluate_pretrainer(load_pretrainer(model_dir), examples)
    training = record["training"]
    ctx.log(
        f"teacher: the shipped one ({training['train_steps']:,} steps, "
        f"{training['wall_seconds'] / 3600:.1f} h on {training['hardware'].split(',')[0]}): "
        f"held-out MLM accuracy {100 * metrics['mlm_accuracy']:.2f} % on this run's data"
    )
    return {
        "model_dir": str(model_dir),
        "eval": metrics,
        "train_steps": training["train_steps"],
        "source": "shipped",
        "shipped": {
            "dir": settings["shipped_dir"],
            "train_steps": training["train_steps"],
            "wall_seconds": training["wall_seconds"],
            "hardware": training["hardware"],
            "heldout_when_built": record["heldout"]["float16"],
        },
    }


# The files of a data directory the pipeline reads, under their names in the project's
# layout whichever layout they sit in (the loaders accept the original releases' too:
# mbert_lib/data/wikitext.py, mbert_lib/data/glue.py), and what each is read for.
DATA_FILE_ROLES = {
    "wikitext-2/train.txt": "WikiText-2's training split: when present, the pre-training "
    "corpus is this split instead of valid + test",
    "wikitext-2/valid.txt": "pre-training text and held-out MLM documents",
    "wikitext-2/test.txt": "pre-training text and held-out MLM documents",
    "glue/SST-2/train.tsv": "pre-training sentences and the fine-tuning training set",
    "glue/SST-2/dev.tsv": "the fine-tuning dev set; its sentences are kept out of pre-training",
    "glue/SST-2/test_labeled.tsv": "SST-2's test sentences with labels (GLUE's own test.tsv "
    "has none): the fine-tuning test set; its sentences are kept out of pre-training",
}


def data_files(data_dir: str | Path) -> dict[str, Path]:
    """{name in the project's layout: path} of the files under `data_dir` the pipeline
    reads, found where the loaders look for them: `wikitext-2/valid.txt` may be
    `wikitext-2/wiki.valid.tokens`, `glue/SST-2/dev.tsv` may be `SST-2/dev.tsv`."""
    root = Path(data_dir)
    files = {}
    for split in wikitext.SPLITS:
        found = [p for p in wikitext.local_candidates(root, "wikitext-2", split) if p.is_file()]
        if found:
            files[f"wikitext-2/{split}.txt"] = found[0]
    try:
        sst2 = glue.find_sst2_dir(root)
    except FileNotFoundError:
        return files
    for name in glue.SST2_FILES.values():
        if (sst2 / name).is_file():
            files[f"glue/SST-2/{name}"] = sst2 / name
    return files


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


def data_inputs(ctx: Context) -> dict:
    """What the data step reads from outside the run, for its fingerprint: the source and
    the sha256 of every file of `data_files` (keyed by the project's layout, not by the
    directory or the release's file names: the same bytes elsewhere are the same data),
    or the Python version for the builtin corpus (its text is the standard library's
    docstrings)."""
    if not ctx.data_dir:
        return {"source": "builtin", "python": platform.python_version()}
    return {
        "source": "local",
        "files": {
            name: _file_sha256(str(p), p.stat().st_size, p.stat().st_mtime_ns)
            for name, p in data_files(ctx.data_dir).items()
        },
    }


STEPS = [
    Step(
        "data",
        "pre-training data: corpus, WordPiece vocabulary, MLM/NSP examples",
        run_data,
        inputs=data_inputs,
    ),
    Step(
        "teacher",
        "the IB-BERT teacher: the shipped one installed, or pre-trained (MLM + NSP)",
        run_teacher,
        ("data",),
    ),
]
