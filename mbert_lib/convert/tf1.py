"""TF1 -> TF2: the released google-research checkpoints into mbert_lib's Pretrainer.

    python -m mbert_lib convert tf1 --bert_config_file F --tf1_checkpoint_path P \\
        --tf2_checkpoint_path OUT [--use_model_prefix]

Unlike tf-models' converter (which drops it), this one keeps the NSP
head, checks every name and shape before writing, and writes nothing on failure.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf

from mbert_lib.checkpoints import DAMAGED, DamagedCheckpointError
from mbert_lib.config import MobileBertConfig
from mbert_lib.convert.check import ConversionReport, Matched, match_variables
from mbert_lib.convert.names import name_map, unused_entries
from mbert_lib.convert.tf2 import pretrainer_from_tf1_arrays, save_pretrainer

# Training state, not model weights: skipped, and listed in the report.
_BOOKKEEPING_NAMES = {
    "global_step",
    "beta1_power",
    "beta2_power",
    "loss_scale",
    "good_steps",
    "current_loss_scale",
}
_SLOT_SUFFIXES = {
    "adam_m",
    "adam_v",
    "lamb_m",
    "lamb_v",
    "Adam",
    "Adam_1",
    "Momentum",
    "Adagrad",
    "RMSProp",
    "RMSProp_1",
    "ExponentialMovingAverage",
}


def is_bookkeeping(name: str) -> bool:
    """True for the global step, optimizer slots ("<weight>/adam_m") and similar state."""
    return name in _BOOKKEEPING_NAMES or name.rsplit("/", 1)[-1] in _SLOT_SUFFIXES


def read_tf1_checkpoint(
    path: str | os.PathLike, config: MobileBertConfig
) -> tuple[dict[str, np.ndarray], Matched]:
    """The weights of a TF1 checkpoint (prefix, or directory with a `checkpoint` file).

    Raises CheckpointMismatchError listing every missing, unexpected and
    mis-shaped variable; returns float32 arrays under the TF1 names.
    """

    path = os.fspath(path)
    try:
        reader = tf.train.load_checkpoint(path)
    except (ValueError, tf.errors.NotFoundError) as e:
        raise FileNotFoundError(f"{path}: not a readable TF1 checkpoint ({e})") from None
    except DAMAGED as e:
        raise DamagedCheckpointError(path, e) from None
    found = reader.get_variable_to_shape_map()
    expected = {e.tf1: e.tf1_shape for e in name_map(config)}
    unused = {e.tf1: e.tf1_shape for e in unused_entries(config)}
    matched = match_variables(path, expected, found, is_bookkeeping, unused)
    try:
        arrays = {
            name: np.asarray(reader.get_tensor(name), dtype=np.float32) for name in matched.names
        }
    except DAMAGED as e:
        raise DamagedCheckpointError(path, e) from None
    return arrays, matched


def convert_tf1_checkpoint(
    bert_config: str | os.PathLike | MobileBertConfig,
    tf1_checkpoint_path: str | os.PathLike,
    tf2_checkpoint_path: str | os.PathLike,
    use_model_prefix: bool = False,
    overwrite: bool = False,
) -> ConversionReport:
    """Converts a TF1 checkpoint into the directory `tf2_checkpoint_path` (see convert.tf2)."""

    config = (
        bert_config
        if isinstance(bert_config, MobileBertConfig)
        else read_released_config(bert_config)
    )
    arrays, matched = read_tf1_checkpoint(tf1_checkpoint_path, config)
    report = ConversionReport(
        source=os.fspath(tf1_checkpoint_path),
        source_format="tf1",
        output=os.fspath(tf2_checkpoint_path),
        converted=len(arrays),
        skipped=matched.skipped,
        unused=matched.unused,
        notes=_notes(config),
    )
    model = pretrainer_from_tf1_arrays(config, arrays)
    save_pretrainer(model, tf2_checkpoint_path, use_model_prefix, overwrite, report)
    return report


# The fields every released bert_config.json (BERT's and MobileBERT's) spells out: they set
# the checkpoint's shapes, and their defaults (BERT-base's) would not match another model.
SHAPE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


def read_released_config(path: str | os.PathLike) -> MobileBertConfig:
    """The MobileBertConfig of a released bert_config.json; ValueError naming the file and
    the fields when one of SHAPE_FIELDS is missing (instead of a shape mismatch later)."""
    config = MobileBertConfig.from_json_file(path)  # a malformed file is named there
    with open(path, encoding="utf-8") as f:
        given = json.load(f)
    missing = [name for name in SHAPE_FIELDS if name not in given]
    if missing:
        raise ValueError(
            f"{os.fspath(path)} lacks {missing}: a checkpoint's bert_config.json "
            "names every field that sets its shapes (BERT-base's defaults would "
            "not match another model's checkpoint)"
        )
    return config


def _notes(config: MobileBertConfig) -> list[str]:
    if config.hidden_act == "gelu":
        return [
            'hidden_act "gelu" is the exact (erf) GELU here; the original TF1 code '
            'computed the tanh approximation ("gelu_new"): outputs differ slightly'
        ]
    return []


def write_tf1_checkpoint(arrays: dict[str, np.ndarray], prefix: str | os.PathLike) -> str:
    """Writes `arrays` as a TF1-format checkpoint (tf.compat.v1 Saver; names kept verbatim).

    Integer scalars (e.g. `global_step`) keep their dtype, everything else is
    float32. Returns the checkpoint prefix.
    """

    prefix = os.fspath(prefix)
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    with tf.Graph().as_default():
        variables = []
        for name, a in arrays.items():
            a = np.asarray(a)
            if not np.issubdtype(a.dtype, np.integer):
                a = a.astype(np.float32)
            variables.append(tf.compat.v1.get_variable(name, initializer=a))
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, prefix, write_meta_graph=False)
