"""The export-time forward (bounded attention mask) against the Keras models, every block branch."""

import numpy as np
import pytest
import tf_keras

import mbert_lib  # noqa: F401
from mbert_lib import build_classifier, build_encoder, get_preset
from mbert_lib.config import MobileBertConfig
from mbert_lib.export import inference
from mbert_lib.export.representative import random_features

SMALL = dict(num_hidden_layers=2, vocab_size=64)
CONFIGS = {
    "student_kq_shared": get_preset("tiny_student").replace(**SMALL),
    "teacher_layer_norm": get_preset("tiny_teacher").replace(**SMALL),
    "bottleneck_attention": get_preset("mobilebert_tiny").replace(
        **SMALL, hidden_size=64, embedding_size=16, intra_bottleneck_size=32, intermediate_size=64
    ),
    "bert": MobileBertConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        type_vocab_size=2,
    ),
}
FEATURES = random_features(4, 12, 64, pad_fraction=0.5, seed=7)  # real padding in every row


def _sharpen(model):
    """Embeddings of O(1) and attention scores spanning several units, as in a trained model."""
    for w in model.weights:
        if "/query/kernel" in w.name or "/key/kernel" in w.name:
            w.assign(w * 8.0)
        if w.name.endswith("embeddings:0") or "classifier_head" in w.name:
            w.assign(w * 30.0)


def _max_diff(got, want):
    """Largest |got - want|, after checking the outputs are not trivially small."""
    want = np.asarray(want)
    assert np.max(np.abs(want)) > 0.1
    return np.max(np.abs(np.asarray(got) - want))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_huge_penalty_is_the_keras_forward(name):
    tf_keras.utils.set_random_seed(0)
    encoder = build_encoder(CONFIGS[name])
    _sharpen(encoder)
    want = encoder(FEATURES, training=False)
    got = inference.model_forward(encoder, FEATURES, mask_penalty=1e9)
    for key in ("sequence_output", "pooled_output"):
        assert _max_diff(got[key], want[key]) < 1e-5
    assert len(got["encoder_outputs"]) == len(want["encoder_outputs"]) == len(encoder.blocks)
    for block, (g, w) in enumerate(zip(got["encoder_outputs"], want["encoder_outputs"])):
        assert _max_diff(g, w) < 1e-5, block


@pytest.mark.parametrize("name", ["student_kq_shared", "teacher_layer_norm"])
def test_default_bounded_mask_is_float_exact_for_a_classifier(name):
    tf_keras.utils.set_random_seed(1)
    classifier = build_classifier(CONFIGS[name], num_classes=3, dropout_rate=0.0)
    _sharpen(classifier)
    want = classifier(FEATURES, training=False)["logits"].numpy()
    got = inference.model_forward(classifier, FEATURES)["logits"].numpy()
    assert _max_diff(got, want) < 1e-5


def test_a_small_penalty_leaks_onto_padding():
    """The bound is a real approximation: too small a c lets padded keys in (so c matters)."""
    tf_keras.utils.set_random_seed(2)
    encoder = build_encoder(CONFIGS["student_kq_shared"])
    _sharpen(encoder)
    want = encoder(FEATURES, training=False)["sequence_output"].numpy()
    leaky = inference.model_forward(encoder, FEATURES, mask_penalty=0.0)["sequence_output"]
    assert _max_diff(leaky, want) > 1e-3


@pytest.mark.parametrize("name", ["student_kq_shared", "bottleneck_attention", "bert"])
def test_attention_scores_are_the_logits_of_the_keras_attention(name):
    """softmax(scores) of every layer = the encoder's attention probabilities; padded keys
    sit at exactly −c, real ones do not depend on c."""
    tf_keras.utils.set_random_seed(3)
    encoder = build_encoder(CONFIGS[name])
    _sharpen(encoder)
    probs = encoder(FEATURES, training=False)["attention_scores"]
    padded = FEATURES["input_mask"][:, None, None, :] == 0  # [B, 1, 1, S]
    for layer in range(len(encoder.blocks)):
        exact = inference.attention_scores(encoder, FEATURES, layer, 1e9).numpy()
        bounded = inference.attention_scores(encoder, FEATURES, layer, 20.0).numpy()
        e = np.exp(exact - exact.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(
            e / e.sum(axis=-1, keepdims=True), probs[layer].numpy(), atol=1e-6
        )
        assert np.all(np.where(padded, bounded, -20.0) == -20.0)
        real = np.broadcast_to(~padded, bounded.shape)
        np.testing.assert_allclose(bounded[real], exact[real], atol=1e-4)
    with pytest.raises(ValueError, match="layer must be in"):
        inference.attention_scores(encoder, FEATURES, len(encoder.blocks))
