"""A fine-tuned Classifier as one serving SavedModel: strings (or token ids) -> predictions.

    served = tf.saved_model.load(PATH)
    out = served.signatures["serving_default"](text=tf.constant(["a fine film"]))
    # pair tasks (MRPC, RTE, STS-B): (text_a=..., text_b=...)
    out["logits"]          [B, C]
    out["probabilities"]   [B, C]   softmax of the logits (classification)
    out["label"]           [B]      the most probable label's name (classification)
    out["score"]           [B]      the one output (a regression, STS-B)

    served.signatures["serve_token_ids"](input_word_ids=..., input_mask=..., input_type_ids=...)
    # the same outputs from the encoder's three int32 inputs [B, T], for a caller that
    # tokenizes itself; served.labels (a string variable) lists the label names by id.

Strings are tokenized and packed by the preprocessing module of
preprocessing.py, which the SavedModel holds with its vocabulary (an asset),
to the fine-tuning sequence length; loading needs tensorflow_text (its ops),
neither mbert_lib nor Keras.
"""

from __future__ import annotations

import os

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.export.preprocessing import Preprocessor, read_model_vocab
from mbert_lib.export.savedmodel import INPUT_SPEC, Hidden

_TEXT = tf.TensorSpec([None], tf.string)


class ClassifierServing(tf.Module):
    """A Classifier with its preprocessor and labels; `signatures()` for tf.saved_model.save."""

    def __init__(self, classifier, labels, preprocessor: Preprocessor):
        super().__init__(name="classifier")
        self._keras = Hidden(classifier)
        self.model_variables = list(classifier.variables)
        self.preprocessor = preprocessor
        self.regression = labels.regression
        self.pair = labels.pair
        self.labels = tf.Variable(list(labels.names or ("score",)), trainable=False, name="labels")

    def predict(self, inputs) -> dict:
        """The three int32 inputs [B, T] -> logits [B, C] and probabilities/label or score."""
        logits = self._keras.model(inputs, training=False)["logits"]
        if self.regression:
            return {"logits": logits, "score": logits[:, 0]}
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label": tf.gather(self.labels, tf.argmax(logits, axis=-1)),
        }

    def _packed(self, *texts):
        segments = [self.preprocessor.tokenize(t) for t in texts]
        return self.preprocessor.pack(segments, self.preprocessor.seq_length)

    def signatures(self) -> dict:
        @tf.function(input_signature=[INPUT_SPEC])
        def serve_token_ids(inputs):
            return self.predict(inputs)

        if self.pair:

            @tf.function(input_signature=[_TEXT, _TEXT])
            def serving_default(text_a, text_b):
                return self.predict(self._packed(text_a, text_b))
        else:

            @tf.function(input_signature=[_TEXT])
            def serving_default(text):
                return self.predict(self._packed(text))

        return {"serving_default": serving_default, "serve_token_ids": serve_token_ids}


def export_classifier_savedmodel(
    classifier,
    labels,
    vocab_file: str | os.PathLike,
    export_path: str | os.PathLike,
    do_lower_case: bool = True,
    seq_length: int = 128,
    overwrite: bool = False,
) -> None:
    """Writes the serving SavedModel of a built Classifier to `export_path` atomically."""

    read_model_vocab(vocab_file, classifier.config.vocab_size)
    if seq_length > classifier.config.max_position_embeddings:
        raise ValueError(
            f"seq_length {seq_length} exceeds the model's max_position_embeddings "
            f"= {classifier.config.max_position_embeddings}"
        )
    module = ClassifierServing(
        classifier, labels, Preprocessor(os.fspath(vocab_file), do_lower_case, seq_length)
    )
    with atomic.atomic_directory(export_path, overwrite=overwrite) as tmp:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
