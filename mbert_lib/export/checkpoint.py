"""Model checkpoints: the format every exporter reads, and a loader with clear errors.

Format: a TF2 object-based checkpoint whose root holds the Keras model under
the name `model`,

    tf.train.Checkpoint(model=model).write(prefix)      # or .save(), or a CheckpointManager

where `model` is a `MobileBertEncoder` (also for BERT configs), a `Classifier`
or a `Pretrainer` of this library. Other roots beside `model` (an optimizer,
a step counter) are ignored, so a training checkpoint loads as is. A
checkpoint path is either a prefix (`dir/ckpt-3`, the files `dir/ckpt-3.index`
and `dir/ckpt-3.data-*`) or a directory, which means its latest checkpoint.

The architecture is not in the checkpoint: it comes from a `bert_config.json`
(MobileBertConfig). Before restoring, the variables the config implies are
compared with those in the checkpoint, so a mismatch names the variables and
shapes that disagree instead of failing later or loading half a model.
"""

from __future__ import annotations

import os
import uuid

import tensorflow as tf

from mbert_lib.config import MobileBertConfig
from mbert_lib.models import build_classifier, build_encoder

MODEL_KINDS = ("encoder", "classifier")
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_HEAD_KERNEL = "model/head/dense/kernel" + _SUFFIX


class CheckpointMismatchError(ValueError):
    """The checkpoint's variables do not fit the model the config describes."""


def save_model_checkpoint(model, prefix: str | os.PathLike) -> str:
    """Writes `tf.train.Checkpoint(model=model)` to `prefix`; returns the prefix."""
    return tf.train.Checkpoint(model=model).write(os.fspath(prefix))


def resolve_checkpoint(path: str | os.PathLike) -> str:
    """The checkpoint prefix for a prefix or a directory (its latest checkpoint)."""
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            found = [f[:-len(".index")] for f in tf.io.gfile.listdir(path) if f.endswith(".index")]
            if len(found) != 1:
                raise FileNotFoundError(
                    f"checkpoint directory {path} has no 'checkpoint' file and "
                    f"{len(found)} checkpoint(s) (*.index): pass a prefix instead")
            latest = os.path.join(path, found[0])
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(
            f"no checkpoint at {path}: expected a directory or a prefix with {path}.index")
    return path


def checkpoint_shapes(prefix: str) -> dict[str, list[int]]:
    """{variable path under the root, e.g. 'model/head/dense/kernel': shape}.

    Optimizer slots and bookkeeping entries are left out.
    """
    shapes = tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_shape_map()
    return {key[:-len(_SUFFIX)]: list(shape) for key, shape in shapes.items()
            if key.endswith(_SUFFIX) and ".OPTIMIZER_SLOT" not in key}


def checkpoint_kind(shapes: dict[str, list[int]]) -> str:
    """'encoder', 'classifier' or 'pretrainer', from the variable paths."""
    keys = [k for k in shapes if k.startswith("model/")]
    if any(k.startswith("model/head/") for k in keys):
        return "classifier"
    if any(k.startswith(("model/masked_lm/", "model/next_sentence/")) for k in keys):
        return "pretrainer"
    if any(k.startswith(("model/embedding/", "model/blocks/")) for k in keys):
        return "encoder"
    raise CheckpointMismatchError(
        "checkpoint holds no mbert_lib model under the root name 'model' "
        f"(first entries: {sorted(shapes)[:5]}); write it as tf.train.Checkpoint(model=model)")


def _expected_shapes(root: tf.train.Checkpoint) -> dict[str, list[int]]:
    """Variable paths and shapes `root` would write, via an in-memory checkpoint."""
    directory = f"ram://mbert_probe_{uuid.uuid4().hex}"
    try:
        return checkpoint_shapes(root.write(f"{directory}/ckpt"))
    finally:
        tf.io.gfile.rmtree(directory)


def _compare(expected: dict, found: dict, scope: str, where: str) -> None:
    """Raises CheckpointMismatchError unless `found` under `scope` equals `expected`."""
    found = {k: v for k, v in found.items() if k.startswith(scope)}
    missing = sorted(set(expected) - set(found))
    unused = sorted(set(found) - set(expected))
    wrong = sorted(k for k in set(expected) & set(found) if expected[k] != found[k])
    problems = []
    if wrong:
        problems.append("shape mismatch: " + "; ".join(
            f"{k} is {found[k]} in the checkpoint, the config needs {expected[k]}"
            for k in wrong[:5]) + (f" (and {len(wrong) - 5} more)" if len(wrong) > 5 else ""))
    if missing:
        problems.append(f"{len(missing)} variable(s) the config needs are not in the "
                        f"checkpoint, e.g. {missing[:3]}")
    if unused:
        problems.append(f"{len(unused)} checkpoint variable(s) the config has no place for, "
                        f"e.g. {unused[:3]}")
    if problems:
        raise CheckpointMismatchError(f"{where}: " + " | ".join(problems))


def load_model(checkpoint: str | os.PathLike, config: MobileBertConfig, model: str = "encoder",
               seq_length: int = 8):
    """Builds the model `config` describes and restores it from `checkpoint`.

    model: "encoder" (a MobileBertEncoder, from an encoder, classifier or
    pretrainer checkpoint) or "classifier" (a Classifier, from a classifier
    checkpoint; the number of classes is read from the head's kernel).
    """
    if model not in MODEL_KINDS:
        raise ValueError(f"model must be one of {MODEL_KINDS}, got {model!r}")
    prefix = resolve_checkpoint(checkpoint)
    found = checkpoint_shapes(prefix)
    kind = checkpoint_kind(found)
    where = f"checkpoint {prefix} ({kind}) vs the config"
    if model == "classifier":
        if kind != "classifier":
            raise CheckpointMismatchError(
                f"checkpoint {prefix} holds a {kind}, not a classifier (no model/head/ variables)")
        net = build_classifier(config, num_classes=found[_HEAD_KERNEL[:-len(_SUFFIX)]][1],
                               dropout_rate=0.0)
        root, scope = tf.train.Checkpoint(model=net), "model/"
    else:
        net = build_encoder(config, seq_length)
        if kind == "encoder":
            root, scope = tf.train.Checkpoint(model=net), "model/"
        else:  # the encoder inside a classifier or pretrainer: model/encoder/...
            root, scope = tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=net)), "model/encoder/"
    _compare(_expected_shapes(root), found, scope, where)
    root.restore(prefix).expect_partial()  # completeness and shapes checked above
    return net
