"""Checkpoint conversion: released TF1 and Hugging Face checkpoints <-> mbert_lib TF2.

    save_pretrainer(model, dir)                      Keras -> a model directory (read back by
                                                     mbert_lib.checkpoints' load_pretrainer /
                                                     load_encoder)
    convert_tf1_checkpoint(config, tf1_path, dir)    released TF1 checkpoint -> dir
    convert_hf(hf_dir, dir)                          Hugging Face layout -> dir
    read_ / write_hf_directory, read_ / write_tf1_checkpoint   the two layouts as arrays
    name_map(config) / name_table(config)            the TF1 / Keras / Hugging Face name map

All of them share one name map (names.py), are strict (a missing, unexpected
or mis-shaped weight stops them, listing every problem) and write atomically.
The other direction, a model directory out to Hugging Face or a SavedModel,
is mbert_lib.export's (above this package: it writes these layouts).
"""

from mbert_lib.checkpoints import (
    CheckpointMismatchError,
    load_config,
    load_encoder,
    load_pretrainer,
)
from mbert_lib.convert.check import ConversionReport
from mbert_lib.convert.hf import convert_hf, read_hf_directory, write_hf_directory
from mbert_lib.convert.names import Entry, name_map, name_table, random_tf1_arrays
from mbert_lib.convert.tf1 import convert_tf1_checkpoint, read_tf1_checkpoint, write_tf1_checkpoint
from mbert_lib.convert.tf2 import (
    pretrainer_from_tf1_arrays,
    save_pretrainer,
    tf1_arrays_from_pretrainer,
)

__all__ = [
    "CheckpointMismatchError",
    "ConversionReport",
    "Entry",
    "convert_hf",
    "convert_tf1_checkpoint",
    "load_config",
    "load_encoder",
    "load_pretrainer",
    "name_map",
    "name_table",
    "pretrainer_from_tf1_arrays",
    "random_tf1_arrays",
    "read_hf_directory",
    "read_tf1_checkpoint",
    "save_pretrainer",
    "tf1_arrays_from_pretrainer",
    "write_hf_directory",
    "write_tf1_checkpoint",
]
