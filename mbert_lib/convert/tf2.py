"""mbert_lib's TF2 checkpoint format: a directory holding a Pretrainer checkpoint and its config.

    DIR/bert_config.json          the MobileBertConfig (released field names)
    DIR/checkpoint, DIR/ckpt-1.*  tf.train.Checkpoint of Pretrainer(encoder + MLM + NSP heads)
    DIR/conversion.json           what a converter read and skipped (converters only)

Checkpoint keys are the Keras attribute paths of the name map
(`encoder/blocks/0/attention/query/kernel/.ATTRIBUTES/VARIABLE_VALUE`), at
the root, or under `model/` (`use_model_prefix`, the layout of a training
loop's `tf.train.Checkpoint(model=...)`). Loading reads either, checks every
name and shape against the config first, and ignores bookkeeping
(save counter, optimizer slots, other root objects).
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.config import MobileBertConfig
from mbert_lib.convert.check import ConversionReport, match_variables
from mbert_lib.convert.names import keras_to_tf1, name_map, tf1_to_keras
from mbert_lib.models import build_encoder, build_pretrainer

CONFIG_NAME = "bert_config.json"
REPORT_NAME = "conversion.json"
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_HEAD_ROOTS = ("masked_lm/", "next_sentence/")


def resolve_variable(root, path: str) -> tf.Variable:
    """The variable at attribute path `path` ("encoder/blocks/0/attention/query/kernel")."""
    obj = root
    for part in path.split("/"):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    if not isinstance(obj, tf.Variable):
        raise ValueError(f"{path} resolves to a {type(obj).__name__}, not a variable")
    return obj


def assign_tf1_arrays(model, arrays: dict[str, np.ndarray], include_heads: bool = True) -> None:
    """Copies TF1-named arrays (already checked) into a built Pretrainer (or, without heads, an encoder)."""
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
    return {e.tf1: keras_to_tf1(e, resolve_variable(root, e.keras).numpy())
            for e in name_map(model.config, include_heads)}


def pretrainer_from_tf1_arrays(config: MobileBertConfig, arrays: dict[str, np.ndarray]):
    model = build_pretrainer(config)
    assign_tf1_arrays(model, arrays)
    return model


def save_pretrainer(model, directory: str | os.PathLike, use_model_prefix: bool = False,
                    overwrite: bool = False, report: ConversionReport | None = None) -> str:
    """Writes `directory` (config + checkpoint [+ report]) atomically; returns the checkpoint prefix."""
    if use_model_prefix:
        checkpoint = tf.train.Checkpoint(model=model)
    else:
        checkpoint = tf.train.Checkpoint(encoder=model.encoder, masked_lm=model.masked_lm,
                                         next_sentence=model.next_sentence)
    with atomic.atomic_directory(directory, overwrite=overwrite) as tmp:
        model.config.to_json_file(os.path.join(tmp, CONFIG_NAME))
        tf.train.CheckpointManager(checkpoint, tmp, max_to_keep=1).save()
        if report is not None:
            atomic.write_text(os.path.join(tmp, REPORT_NAME), report.to_json_string())
    return tf.train.latest_checkpoint(os.fspath(directory))


def checkpoint_prefix(path: str | os.PathLike) -> str:
    """The checkpoint prefix for a checkpoint directory or a prefix path."""
    path = os.fspath(path)
    if os.path.isdir(path):
        prefix = tf.train.latest_checkpoint(path)
        if prefix is None:
            raise FileNotFoundError(f"{path}: no TF2 checkpoint in this directory "
                                    "(no 'checkpoint' state file)")
        return prefix
    if not os.path.exists(path + ".index"):
        raise FileNotFoundError(f"{path}: neither a checkpoint directory nor a checkpoint "
                                f"prefix ({path}.index does not exist)")
    return path


def load_config(path: str | os.PathLike, config: MobileBertConfig | None = None) -> MobileBertConfig:
    """The config of checkpoint `path` (its directory's bert_config.json), checked against `config`."""
    path = os.fspath(path)
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    config_file = os.path.join(directory, CONFIG_NAME)
    stored = MobileBertConfig.from_json_file(config_file) if os.path.exists(config_file) else None
    if config is None and stored is None:
        raise FileNotFoundError(f"{config_file} does not exist; pass the config explicitly")
    if config is not None and stored is not None and config != stored:
        diff = {k: (v, stored.to_dict()[k]) for k, v in config.to_dict().items()
                if stored.to_dict()[k] != v}
        raise ValueError(f"the given config differs from {config_file}: "
                         + ", ".join(f"{k}={a!r} vs {b!r}" for k, (a, b) in sorted(diff.items())))
    return config if config is not None else stored


def _checkpoint_weights(prefix: str, config: MobileBertConfig, include_heads: bool):
    """{keras path: checkpoint key} after checking every name and shape against `config`."""
    listed = {k: tuple(s) for k, s in tf.train.list_variables(prefix)}
    root = "model/" if any(k.startswith("model/") for k in listed) else ""
    if not include_heads:
        scopes = (root + "encoder/",)
    elif root:
        scopes = (root,)
    else:
        scopes = ("encoder/",) + _HEAD_ROOTS
    found = {k[len(root):-len(_SUFFIX)]: s for k, s in listed.items()
             if k.endswith(_SUFFIX) and k.startswith(scopes) and ".OPTIMIZER_SLOT" not in k}
    expected = {e.keras: e.keras_shape for e in name_map(config, include_heads)}
    match_variables(prefix, expected, found, is_bookkeeping=lambda k: False,
                    note="is this a checkpoint of this config (bert_config.json)?")
    return {path: root + path + _SUFFIX for path in expected}


def _load(path, config, include_heads):
    prefix = checkpoint_prefix(path)
    config = load_config(path, config)
    keys = _checkpoint_weights(prefix, config, include_heads)
    reader = tf.train.load_checkpoint(prefix)
    model = build_pretrainer(config) if include_heads else build_encoder(config)
    root = model if include_heads else _EncoderRoot(model)
    for path_, key in keys.items():
        resolve_variable(root, path_).assign(reader.get_tensor(key))
    return model


def load_pretrainer(path: str | os.PathLike, config: MobileBertConfig | None = None):
    """A Pretrainer (encoder + MLM + NSP heads) from a checkpoint directory or prefix.

    The config comes from the directory's bert_config.json (or `config`; if
    both exist they must agree). Every weight's name and shape is checked
    before anything is loaded: a mismatch raises CheckpointMismatchError
    listing all differences.
    """
    return _load(path, config, include_heads=True)


def load_encoder(path: str | os.PathLike, config: MobileBertConfig | None = None):
    """The MobileBertEncoder alone from a checkpoint (heads, if any, are not read)."""
    return _load(path, config, include_heads=False)
