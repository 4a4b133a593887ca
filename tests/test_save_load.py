"""A saved and re-loaded model (.keras file, SavedModel directory) gives identical outputs."""

import numpy as np
import pytest
import tf_keras

from mbert_lib.models import (
    Classifier,
    MobileBertEncoder,
    Pretrainer,
    build_classifier,
    build_encoder,
    build_pretrainer,
)
from tests.helpers import random_inputs, randomize_affine_weights, small_config

CONFIG = small_config("tiny_student", num_hidden_layers=1, classifier_activation=True)

KINDS = {
    "encoder": (lambda: build_encoder(CONFIG), MobileBertEncoder, "sequence_output"),
    "pretrainer": (lambda: build_pretrainer(CONFIG), Pretrainer, "mlm_logits"),
    "classifier": (lambda: build_classifier(CONFIG, 3), Classifier, "logits"),
}


@pytest.mark.parametrize("fmt", ["keras", "savedmodel"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_save_and_reload_gives_identical_outputs(tmp_path, kind, fmt):
    build, model_class, key = KINDS[kind]
    model = build()
    randomize_affine_weights(model)
    inputs = random_inputs(CONFIG)
    if kind == "pretrainer":
        inputs["masked_lm_positions"] = np.array([[1, 2], [0, 3]], np.int32)
    want = model(inputs)
    if fmt == "keras":
        path = tmp_path / f"{kind}.keras"
        model.save(path)
    else:
        path = tmp_path / kind
        model.save(path, save_format="tf")
    fresh = build()  # same config, different random weights: the reload must not be this
    assert np.abs(fresh(inputs)[key].numpy() - want[key].numpy()).max() > 1e-4
    restored = tf_keras.models.load_model(path)
    assert isinstance(restored, model_class)
    assert restored.config == CONFIG
    got = restored(inputs)
    assert set(got) == set(want)
    for name in want:
        if isinstance(want[name], list):
            for a, b in zip(got[name], want[name], strict=True):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
        else:
            np.testing.assert_array_equal(got[name].numpy(), want[name].numpy())
