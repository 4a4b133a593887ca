"""The final model of a run: `bert_config.json` + a weights-only checkpoint (+ tokenizer files).

    model_dir/bert_config.json       the architecture (released-checkpoint field names)
    model_dir/model.ckpt.{index,data-*}   tf.train.Checkpoint(model=<Pretrainer>), no optimizer
    model_dir/vocab.txt, ...         whatever the data pipeline's `save_tokenizer` writes

`load_pretrainer(model_dir)` rebuilds the Pretrainer from these files (the
teacher for distillation, the starting point for fine-tuning).
"""

from __future__ import annotations

import os
from typing import Callable, Optional

import tensorflow as tf

from mbert_lib.config import MobileBertConfig
from mbert_lib.models import Pretrainer, build_pretrainer

CONFIG_FILE = "bert_config.json"
WEIGHTS_PREFIX = "model.ckpt"


def export_pretrainer(model: Pretrainer, model_dir: str | os.PathLike,
                      save_tokenizer: Optional[Callable[[str], None]] = None) -> str:
    """Writes bert_config.json, the weights and the tokenizer files; the weights' path."""
    model_dir = os.fspath(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    # Checkpoint.write is atomic per file set (temp files, then rename).
    path = tf.train.Checkpoint(model=model).write(os.path.join(model_dir, WEIGHTS_PREFIX))
    model.config.to_json_file(os.path.join(model_dir, CONFIG_FILE))
    if save_tokenizer is not None:
        save_tokenizer(model_dir)
    return path


def load_pretrainer(model_dir: str | os.PathLike) -> Pretrainer:
    """The exported Pretrainer of `model_dir`; every saved weight must match the config."""
    model_dir = os.fspath(model_dir)
    config_path = os.path.join(model_dir, CONFIG_FILE)
    prefix = os.path.join(model_dir, WEIGHTS_PREFIX)
    if not os.path.exists(config_path) or not os.path.exists(prefix + ".index"):
        raise FileNotFoundError(f"{model_dir} holds no exported model: expected {CONFIG_FILE} "
                                f"and {WEIGHTS_PREFIX}.index")
    model = build_pretrainer(MobileBertConfig.from_json_file(config_path))
    try:
        tf.train.Checkpoint(model=model).read(prefix).assert_consumed()
    except AssertionError as e:
        raise ValueError(f"{prefix} does not match {config_path}: {e}") from e
    return model
