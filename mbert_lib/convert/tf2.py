"""Between TF1-named arrays and mbert_lib's Keras models, and the converters' output directory.

A converter's output is a model directory (mbert_lib.checkpoints):

    DIR/bert_config.json          the MobileBertConfig (released field names)
    DIR/model.ckpt.*              the Pretrainer (encoder + MLM + NSP heads)
    DIR/conversion.json           what the converter read and skipped

Checkpoint keys are the Keras attribute paths of the name map
(`encoder/blocks/0/attention/query/kernel`), under `model/`
(`use_model_prefix`, the layout of every mbert_lib training run) or at the
root as tf-models' pretrainer checkpoints have them (`encoder/`,
`masked_lm/`, `next_sentence/`). `mbert_lib.checkpoints.load_*` read both.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from mbert_lib import checkpoints
from mbert_lib.config import MobileBertConfig
from mbert_lib.convert.check import ConversionReport
from mbert_lib.convert.names import keras_to_tf1, name_map, tf1_to_keras
from mbert_lib.models import build_pretrainer

REPORT_NAME = "conversion.json"


def resolve_variable(root, path: str) -> tf.Variable:
    """The variable at attribute path `path` ("encoder/blocks/0/attention/query/kernel")."""
    obj = root
    for part in path.split("/"):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    if not isinstance(obj, tf.Variable):
        raise ValueError(f"{path} resolves to a {type(obj).__name__}, not a variable")
    return obj


def assign_tf1_arrays(model, arrays: dict[str, np.ndarray], include_heads: bool = True) -> None:
    """Copies TF1-named arrays (already checked) into a built Pretrainer (or, without heads,
    an encoder)."""
    root = model if include_heads else _EncoderRoot(model)
    for e in name_map(model.config, include_heads):
        resolve_variable(root, e.keras).assign(tf1_to_keras(e, arrays[e.tf1]).astype(np.float32))


class _EncoderRoot:
    """Lets an encoder be addressed by the Pretrainer's `encoder/...` paths."""

    def __init__(self, encoder):
        self.encoder = encoder


def tf1_arrays_from_pretrainer(model, include_heads: bool = True) -> dict[str, np.ndarray]:
    """A built Pretrainer's (or encoder's) weights under the released TF1 names, TF1 shapes."""
    root = model if include_heads else _EncoderRoot(model)
    return {
        e.tf1: keras_to_tf1(e, resolve_variable(root, e.keras).numpy())
        for e in name_map(model.config, include_heads)
    }


def pretrainer_from_tf1_arrays(config: MobileBertConfig, arrays: dict[str, np.ndarray]):
    model = build_pretrainer(config)
    assign_tf1_arrays(model, arrays)
    return model


def save_pretrainer(
    model,
    directory: str | os.PathLike,
    use_model_prefix: bool = False,
    overwrite: bool = False,
    report: ConversionReport | None = None,
    extra_files: dict[str, str] | None = None,
) -> str:
    """Writes the model directory (+ extra_files, {name: text}) atomically; returns the
    weights prefix."""
    root = (
        None
        if use_model_prefix
        else {
            "encoder": model.encoder,
            "masked_lm": model.masked_lm,
            "next_sentence": model.next_sentence,
        }
    )
    extra = dict(extra_files or {})
    if report is not None:
        extra[REPORT_NAME] = report.to_json_string()
    return checkpoints.save_model_dir(
        model, directory, extra_files=extra, overwrite=overwrite, root=root
    )
