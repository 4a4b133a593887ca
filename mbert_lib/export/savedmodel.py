"""A TF-Hub-style encoder SavedModel (the "Reusable SavedModel" interface of TF Hub).

    encoder = tf.saved_model.load(PATH)           # or hub.KerasLayer(PATH, trainable=True)
    out = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    out["sequence_output"]   [B, T, H]
    out["pooled_output"]     [B, H]     (also as out["default"])
    out["encoder_outputs"]   L × [B, T, H]
    encoder.mlm({..., "masked_lm_positions": positions [B, P]})
        -> the same plus "mlm_logits" [B, P, V] and "nsp_logits" [B, 2]
    encoder.vocab_file       the vocabulary (a SavedModel asset)
    encoder.do_lower_case    a bool variable

`__call__` takes `training` (dropout on) for fine-tuning through
hub.KerasLayer; `variables`, `trainable_variables` and `regularization_losses`
are stored as the interface asks. Signatures for TF Serving: `serving_default`
(inputs as above; `encoder_outputs` stacked to [L, B, T, H], since a
signature returns only tensors) and `mlm`. The SavedModel holds only
variables and tf.functions: loading it needs neither mbert_lib nor Keras.
"""

from __future__ import annotations

import os

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.export.preprocessing import read_model_vocab
from mbert_lib.models import INPUT_NAMES

INPUT_SPEC = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
_MLM_SPEC = {
    **INPUT_SPEC,
    "masked_lm_positions": tf.TensorSpec([None, None], tf.int32, name="masked_lm_positions"),
}


class Hidden:
    """Holds a Keras model without making it a SavedModel dependency (only its variables are)."""

    def __init__(self, model):
        self.model = model


def _encoder_dict(outputs) -> dict:
    return {
        "sequence_output": outputs["sequence_output"],
        "pooled_output": outputs["pooled_output"],
        "default": outputs["pooled_output"],
        "encoder_outputs": list(outputs["encoder_outputs"]),
    }


class _ReusableModule(tf.Module):
    # The Reusable SavedModel interface stores these as plain attributes;
    # they shadow tf.Module's computed properties of the same names.
    variables = None
    trainable_variables = None

    def _set_variables(self, model) -> None:
        self.variables = list(model.variables)
        self.trainable_variables = list(model.trainable_variables)
        self.regularization_losses = []


class MaskedLMModule(_ReusableModule):
    """Encoder + MLM + NSP heads; `__call__` also takes masked_lm_positions [B, P]."""

    def __init__(self, pretrainer):
        super().__init__(name="mlm")
        self._keras = Hidden(pretrainer)
        self._set_variables(pretrainer)

    @tf.function
    def __call__(self, inputs, training=False):
        out = self._keras.model(inputs, training=training)
        return {
            **_encoder_dict(out),
            "mlm_logits": out["mlm_logits"],
            "nsp_logits": out["nsp_logits"],
        }


class EncoderModule(_ReusableModule):
    """The encoder as a Reusable SavedModel root, with `mlm`, `vocab_file`, `do_lower_case`."""

    def __init__(self, pretrainer, vocab_file: str, do_lower_case: bool):
        super().__init__(name="encoder")
        self._keras = Hidden(pretrainer.encoder)
        self._set_variables(pretrainer.encoder)
        self.mlm = MaskedLMModule(pretrainer)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")

    @tf.function
    def __call__(self, inputs, training=False):
        return _encoder_dict(self._keras.model(inputs, training=training))

    def trace(self) -> None:
        """Traces both call functions for training False/True (a loaded model cannot retrace)."""
        for training in (False, True):
            self.__call__.get_concrete_function(INPUT_SPEC, training=training)
            self.mlm.__call__.get_concrete_function(_MLM_SPEC, training=training)

    def signatures(self) -> dict:
        """`serving_default` and `mlm`, with encoder_outputs stacked to [L, B, T, H]."""

        @tf.function(input_signature=[INPUT_SPEC])
        def serving_default(inputs):
            out = self.__call__(inputs, training=False)
            return {**out, "encoder_outputs": tf.stack(out["encoder_outputs"])}

        @tf.function(input_signature=[_MLM_SPEC])
        def mlm(inputs):
            out = self.mlm(inputs, training=False)
            return {**out, "encoder_outputs": tf.stack(out["encoder_outputs"])}

        return {"serving_default": serving_default, "mlm": mlm}


def export_savedmodel(
    pretrainer,
    vocab_file: str | os.PathLike,
    export_path: str | os.PathLike,
    do_lower_case: bool = True,
    overwrite: bool = False,
) -> None:
    """Writes the encoder SavedModel of a built Pretrainer to `export_path` atomically."""

    read_model_vocab(vocab_file, pretrainer.config.vocab_size)
    module = EncoderModule(pretrainer, os.fspath(vocab_file), do_lower_case)
    module.trace()
    with atomic.atomic_directory(export_path, overwrite=overwrite) as tmp:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
