"""The attention-transfer lab as a pipeline step (`reproduce --recipe attention_lab`).

    attention_lab   a small IB-BERT teacher learns the generated induction task; five
                    students (PKT, FMT only, AT only, copy only, no transfer) get the same
                    updates over several seeds; <out>/attention_lab.json (mbert_lib.lab)

The lab resumes by itself (a record per finished model under <out>/attention_lab/).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mbert_lib.lab.run import RESULT_FILE, run_lab
from mbert_lib.lab.settings import lab_settings
from mbert_lib.pipeline.core import DEFAULT_OUT, Context, PipelineError, Step
from mbert_lib.pipeline.recipe_settings import load_recipe_settings
from mbert_lib.runtime import fast_mode

NAME = "attention_lab"
# The lab in fast mode (CI): every piece runs, nothing is learned; notebook 10 and
# tests/test_lab.py share its directory, so it trains once per test run.
FAST_LAB = {
    "task": {"num_symbols": 12, "seq_length": 24, "max_period": 5, "max_lead": 2},
    "train_documents": 200,
    "dev_documents": 40,
    "teacher_steps": 6,
    "student_steps": 8,
    "layer_steps": 2,
    "seeds": 2,
    "curve_interval": 4,
    "curve_examples": 20,
    "jit_compile": False,  # compiling costs more than 8 steps save
}


def fast_lab_dir() -> Path:
    return Path(tempfile.gettempdir()) / "mbert_fast_lab"


def notebook_lab_dir() -> Path:
    """Where notebook 10's lab lives: runs/attention_lab, or `fast_lab_dir()` in fast mode."""
    return fast_lab_dir() if fast_mode() else DEFAULT_OUT / NAME


def notebook_lab(log=print) -> dict:
    """The lab a notebook shows (`notebook_lab_dir()`): the recipe's, trained when missing
    and read back when done, or in fast mode the tiny FAST_LAB."""
    settings = FAST_LAB if fast_mode() else load_recipe_settings(NAME)[NAME]
    return run_lab(lab_settings(settings), notebook_lab_dir(), log)


def run_attention_lab(ctx: Context, settings: Mapping[str, Any]) -> dict:
    try:
        parsed = lab_settings(settings)
    except ValueError as e:
        raise PipelineError(f"recipe {ctx.recipe!r}: {e}") from None
    summary = run_lab(parsed, ctx.out_dir, ctx.log)
    means = {v: sum(a) / len(a) for v, a in summary["students"].items()}
    return {
        "file": RESULT_FILE,
        "teacher_structured_accuracy": summary["teacher"]["structured_accuracy"],
        "student_mean_structured_accuracy": means,
        "targets": summary["targets"],
    }


STEPS = [
    Step(
        NAME,
        "attention lab: induction task, teacher, five students x seeds",
        run_attention_lab,
        optional=False,
    ),
]
