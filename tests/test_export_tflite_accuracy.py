"""Accuracy of every precision through the interpreter, on a toy task a tiny classifier learns.

The toy task stands in for SST-2: a sentence is "positive" when it holds more
tokens from a positive id range than from a negative one. Padding varies, so
masking matters.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import mbert_lib  # noqa: F401
from mbert_lib import build_classifier, get_preset
from mbert_lib.export import evaluate, tflite
from mbert_lib.export.representative import random_features, representative_dataset

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

T, V = 16, 40
CONFIG = get_preset("tiny_student").replace(
    num_hidden_layers=2, vocab_size=V, attention_probs_dropout_prob=0.0
)


def toy_task(n, seed):
    features = random_features(n, T, V, pad_fraction=0.5, seed=seed)
    ids = features["input_word_ids"]
    positive = ((ids >= 2) & (ids < 8)).sum(axis=1)
    negative = ((ids >= 8) & (ids < 14)).sum(axis=1)
    return features, (positive > negative).astype(np.int32)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    tf_keras.utils.set_random_seed(0)
    model = build_classifier(CONFIG, num_classes=2, dropout_rate=0.0)
    train_x, train_y = toy_task(2048, seed=1)
    test_x, test_y = toy_task(256, seed=2)
    optimizer = tf_keras.optimizers.Adam(1e-3)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)["logits"]
            loss = tf.reduce_mean(
                tf_keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            )
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    for _ in range(2):
        for start in range(0, 2048, 32):
            step(
                {k: v[start : start + 32] for k, v in train_x.items()}, train_y[start : start + 32]
            )
    calibration = representative_dataset(train_x, limit=200)
    result = evaluate.evaluate_precisions(
        model,
        test_x,
        test_y,
        int8=tflite.Int8Options(calibration),
        workdir=tmp_path_factory.mktemp("acc"),
        num_threads=1,
        name="toy",
    )
    exact_mask = evaluate.evaluate_precisions(
        model,
        test_x,
        test_y,
        int8=tflite.Int8Options(calibration, mask_penalty=None),
        workdir=tmp_path_factory.mktemp("exact"),
        precisions=("int8",),
        num_threads=1,
        name="toy",
    )
    print(
        "\n"
        + evaluate.format_table(result)
        + "\nint8 with the -1e9 mask:\n"
        + evaluate.format_table(exact_mask)
    )
    return {**{r["precision"]: r for r in result}, "int8_exact_mask": exact_mask[0]}


def test_keras_model_learned_the_task(records):
    assert records["fp32"]["keras_accuracy"] > 0.9


def test_fp32_is_the_keras_model(records):
    r = records["fp32"]
    assert r["error"] is None
    assert r["accuracy"] == r["keras_accuracy"]
    assert r["agreement"] == 1.0
    assert r["max_abs_logit_diff"] < 1e-4


@pytest.mark.parametrize("precision", ["dynamic_int8", "float16"])
def test_weight_quantized_precisions_keep_accuracy(records, precision):
    r = records[precision]
    assert abs(r["accuracy"] - r["keras_accuracy"]) <= 0.02
    assert r["size_bytes"] < records["fp32"]["size_bytes"]


def test_full_int8_is_reported(records):
    r = records["int8"]
    assert r["error"] is None
    assert 0.0 <= r["accuracy"] <= 1.0 and np.isfinite(r["max_abs_logit_diff"])
    assert set(r) >= {
        "precision",
        "accuracy",
        "keras_accuracy",
        "max_abs_logit_diff",
        "agreement",
        "size_bytes",
        "path",
    }


def test_bounded_mask_rescues_int8(records):
    """With the model's -1e9 mask, int8 attention over real tokens collapses (inference.py)."""
    bounded, exact = records["int8"], records["int8_exact_mask"]
    assert bounded["max_abs_logit_diff"] < 0.5 * exact["max_abs_logit_diff"]
    assert bounded["agreement"] >= exact["agreement"]


def test_every_precision_has_a_record(records):
    assert list(records)[:4] == list(tflite.PRECISIONS)
