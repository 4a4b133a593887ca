"""Encoders and task models: shapes for every preset, pooler, dropout, padding, input errors."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib.config import PRESETS
from mbert_lib.models import (
    BertEncoder,
    Classifier,
    MobileBertEncoder,
    Pretrainer,
    build_classifier,
    build_encoder,
    build_pretrainer,
)
from tests.helpers import random_inputs, randomize_affine_weights, randomize_kernels, small_config

B, T = 2, 9
OUTPUT_KEYS = {
    "embedding_output",
    "sequence_output",
    "pooled_output",
    "encoder_outputs",
    "attention_scores",
}
SMALL_BERT = small_config(
    "bert_base",
    hidden_size=32,
    embedding_size=32,
    intra_bottleneck_size=32,
    num_attention_heads=4,
    intermediate_size=64,
)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_builds_with_the_right_shapes(preset):
    config = small_config(preset)
    H, N, L = config.hidden_size, config.num_attention_heads, config.num_hidden_layers
    model = build_pretrainer(config)
    inputs = random_inputs(config, batch=B, seq=T)
    inputs["masked_lm_positions"] = np.array([[1, 2, 3, 4], [0, 1, 2, 5]], np.int32)
    out = model(inputs)
    assert set(out) == OUTPUT_KEYS | {"mlm_logits", "nsp_logits"}
    assert out["embedding_output"].shape == (B, T, H)
    assert out["sequence_output"].shape == (B, T, H)
    assert out["pooled_output"].shape == (B, H)
    assert len(out["encoder_outputs"]) == len(out["attention_scores"]) == L
    assert all(x.shape == (B, T, H) for x in out["encoder_outputs"])
    assert all(p.shape == (B, N, T, T) for p in out["attention_scores"])
    np.testing.assert_array_equal(
        out["encoder_outputs"][-1].numpy(), out["sequence_output"].numpy()
    )
    assert out["mlm_logits"].shape == (B, 4, config.vocab_size)
    assert out["nsp_logits"].shape == (B, 2)
    assert model.encoder.embedding_table.shape == (config.vocab_size, config.embedding_size)
    classifier = build_classifier(config, num_classes=3, encoder=model.encoder)
    del inputs["masked_lm_positions"]
    assert classifier(inputs)["logits"].shape == (B, 3)


def _same_weights_clone(model, inputs):
    clone = type(model).from_config(model.get_config())
    clone(inputs)
    clone.set_weights(model.get_weights())
    return clone


def _built_bert_encoder(config):
    model = BertEncoder(config)
    model(random_inputs(config))
    return model


@pytest.mark.parametrize("kind", ["encoder", "pretrainer", "classifier", "bert_encoder"])
def test_keras_config_round_trip_gives_the_same_outputs(kind):
    config = SMALL_BERT if kind == "bert_encoder" else small_config("tiny_teacher")
    model = {
        "encoder": build_encoder,
        "pretrainer": build_pretrainer,
        "classifier": lambda c: build_classifier(c, 3, dropout_rate=0.2),
        "bert_encoder": _built_bert_encoder,
    }[kind](config)
    randomize_affine_weights(model)
    inputs = random_inputs(config)
    clone = _same_weights_clone(model, inputs)
    assert type(clone) is type(model) and clone.config == config
    if kind == "classifier":
        assert (clone.num_classes, clone.dropout_rate) == (3, 0.2)
    got, want = clone(inputs), model(inputs)
    key = "logits" if kind == "classifier" else "sequence_output"
    np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    assert tf_keras.utils.serialize_keras_object(model)["config"] == model.get_config()


def test_pooled_output_is_the_raw_cls_vector_without_classifier_activation():
    config = small_config("tiny_student")
    assert not config.classifier_activation
    model = build_encoder(config)
    randomize_affine_weights(model)
    assert model.pooler is None
    out = model(random_inputs(config))
    np.testing.assert_array_equal(
        out["pooled_output"].numpy(), out["sequence_output"].numpy()[:, 0]
    )


def test_pooled_output_is_tanh_dense_of_cls_with_classifier_activation():
    config = small_config("tiny_student", classifier_activation=True)
    model = build_encoder(config)
    randomize_affine_weights(model)
    randomize_kernels(model)
    out = model(random_inputs(config))
    cls = out["sequence_output"].numpy()[:, 0]  # [B, H]
    expected = np.tanh(cls @ model.pooler.kernel.numpy() + model.pooler.bias.numpy())
    np.testing.assert_allclose(out["pooled_output"].numpy(), expected, rtol=1e-5, atol=1e-5)
    assert np.abs(expected - cls).max() > 0.1


@pytest.mark.parametrize("model_class", [MobileBertEncoder, BertEncoder])
def test_dropout_only_in_training(model_class):
    config = small_config("tiny_teacher") if model_class is MobileBertEncoder else SMALL_BERT
    assert config.hidden_dropout_prob > 0 and config.attention_probs_dropout_prob > 0
    model = model_class(config)
    inputs = random_inputs(config)
    first = model(inputs)["sequence_output"].numpy()
    np.testing.assert_array_equal(model(inputs, training=False)["sequence_output"].numpy(), first)
    train_a = model(inputs, training=True)["sequence_output"].numpy()
    train_b = model(inputs, training=True)["sequence_output"].numpy()
    assert np.abs(train_a - first).max() > 1e-3
    assert np.abs(train_a - train_b).max() > 1e-3


def test_dropout_free_config_is_deterministic_in_training():
    config = small_config("tiny_student", attention_probs_dropout_prob=0.0)
    assert config.hidden_dropout_prob == 0.0
    model = build_encoder(config)
    inputs = random_inputs(config)
    np.testing.assert_array_equal(
        model(inputs, training=True)["sequence_output"].numpy(),
        model(inputs, training=False)["sequence_output"].numpy(),
    )


def _padded(real_ids, real_types, pads):
    n = len(real_ids)
    return {
        "input_word_ids": np.array([list(real_ids) + [0] * pads], np.int32),
        "input_mask": np.array([[1] * n + [0] * pads], np.int32),
        "input_type_ids": np.array([list(real_types) + [0] * pads], np.int32),
    }


@pytest.mark.parametrize("preset", ["tiny_student", "tiny_teacher"])
def test_real_token_outputs_do_not_depend_on_padding_length(preset):
    """1 pad vs 5 pads: same outputs on the real tokens (the last real token sees
    the first pad through the trigram window in both cases, as in every MobileBERT)."""
    config = small_config(preset)
    model = build_encoder(config)
    randomize_affine_weights(model)
    randomize_kernels(model)
    rng = np.random.RandomState(5)
    n = 7
    ids, types = rng.randint(1, config.vocab_size, n), [0] * 4 + [1] * 3
    short, long = model(_padded(ids, types, 1)), model(_padded(ids, types, 5))

    def close(a, b, what):
        scale = max(1.0, float(np.abs(b).max()))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale, err_msg=what)

    for i, (a, b) in enumerate(zip(short["encoder_outputs"], long["encoder_outputs"])):
        close(a.numpy()[:, :n], b.numpy()[:, :n], f"encoder_outputs[{i}]")
    for i, (a, b) in enumerate(zip(short["attention_scores"], long["attention_scores"])):
        close(a.numpy()[..., :n, :n], b.numpy()[..., :n, :n], f"attention_scores[{i}]")
        assert np.all(b.numpy()[..., n:] == 0.0)
    close(short["pooled_output"].numpy(), long["pooled_output"].numpy(), "pooled_output")

    # Teeth: without the mask the padding length does change the real tokens' outputs.
    unmasked_short = model({**_padded(ids, types, 1), "input_mask": np.ones((1, n + 1))})
    unmasked_long = model({**_padded(ids, types, 5), "input_mask": np.ones((1, n + 5))})
    diff = (
        unmasked_short["sequence_output"].numpy()[:, :n]
        - unmasked_long["sequence_output"].numpy()[:, :n]
    )
    assert np.abs(diff).max() > 1e-3


def test_trigram_window_reaches_exactly_one_pad_token():
    """The last real token's embedding sees the first pad's id, not the second's."""
    config = small_config("tiny_student")
    model = build_encoder(config)
    n = 5
    base = _padded(range(1, n + 1), [0] * n, 2)
    first, second = (dict(base, input_word_ids=base["input_word_ids"].copy()) for _ in range(2))
    first["input_word_ids"][0, n] = 9
    second["input_word_ids"][0, n + 1] = 9
    real = lambda inputs: model(inputs)["embedding_output"].numpy()[0, :n]  # noqa: E731
    assert np.abs(real(first) - real(base))[n - 1].max() > 1e-4
    np.testing.assert_array_equal(real(first)[: n - 1], real(base)[: n - 1])
    np.testing.assert_array_equal(real(second), real(base))


def test_default_mask_and_types_and_sequence_inputs():
    config = small_config("tiny_student")
    model = build_encoder(config)
    randomize_affine_weights(model)
    ids = random_inputs(config, pads=(0,))["input_word_ids"]
    full = {
        "input_word_ids": ids,
        "input_mask": np.ones_like(ids),
        "input_type_ids": np.zeros_like(ids),
    }
    want = model(full)["sequence_output"].numpy()
    for inputs in (
        {"input_word_ids": ids},
        [ids],
        (ids, np.ones_like(ids)),
        ids,
        [ids, full["input_mask"], full["input_type_ids"]],
    ):
        np.testing.assert_array_equal(model(inputs)["sequence_output"].numpy(), want)


@pytest.mark.parametrize("model_class", [MobileBertEncoder, BertEncoder])
def test_too_long_sequence_names_max_position_embeddings(model_class):
    config = SMALL_BERT
    model = model_class(config)
    too_long = np.ones((1, config.max_position_embeddings + 1), np.int32)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model({"input_word_ids": too_long})
    spec = tf.TensorSpec([None, None], tf.int32)
    run = tf.function(lambda ids: model(ids)["sequence_output"], input_signature=[spec])
    assert run(too_long[:, 1:]).shape == (1, config.max_position_embeddings, 32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings"):
        run(too_long)


def test_bad_inputs_raise_value_errors():
    config = small_config("tiny_student")
    model = build_encoder(config)
    inputs = random_inputs(config)
    with pytest.raises(ValueError, match="input_word_id"):
        model({**inputs, "input_word_id": inputs["input_word_ids"]})
    with pytest.raises(ValueError, match="input_word_ids"):
        model({"input_mask": inputs["input_mask"]})
    with pytest.raises(ValueError, match="input_word_ids"):
        model(inputs["input_word_ids"][0])


def test_task_models_share_the_encoder_they_are_given():
    config = small_config("tiny_student")
    encoder = build_encoder(config)
    pretrainer = build_pretrainer(config, encoder=encoder)
    classifier = build_classifier(config, 2, encoder=encoder)
    assert isinstance(pretrainer, Pretrainer) and isinstance(classifier, Classifier)
    assert pretrainer.encoder is encoder and classifier.encoder is encoder
    assert pretrainer.config == classifier.config == config
    inputs = random_inputs(config)
    np.testing.assert_array_equal(
        pretrainer(inputs)["sequence_output"].numpy(), encoder(inputs)["sequence_output"].numpy()
    )


HEADS_ONLY_CONFIGS = {
    **{p: small_config(p) for p in sorted(PRESETS)},
    "bottleneck_attention": small_config(
        "mobilebert", use_bottleneck_attention=True, key_query_shared_bottleneck=False
    ),
}


def _heads_only_pretrainer(name):
    if name == "bert_encoder":
        model = Pretrainer(_built_bert_encoder(SMALL_BERT))
        model(random_inputs(SMALL_BERT))
        config = SMALL_BERT
    else:
        config = HEADS_ONLY_CONFIGS[name]
        model = build_pretrainer(config)
    randomize_kernels(model)
    randomize_affine_weights(model)
    inputs = random_inputs(config, batch=B, seq=T, pads=(0, 3))
    # Repeated, unsorted and padded-slot (0) positions, as real batches have.
    inputs["masked_lm_positions"] = np.array([[7, 2, 2, 0], [5, 1, 0, 0]], np.int32)
    return model, inputs


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HEADS_ONLY_CONFIGS) + ["bert_encoder"])
def test_heads_only_gives_the_full_models_logits_and_gradients(name):
    """heads_only runs the last block at [CLS] + the masked positions only; every
    head output and every gradient must equal the full model's."""
    model, inputs = _heads_only_pretrainer(name)
    positions = inputs["masked_lm_positions"]
    weights = tf.random.stateless_normal([B, 4, model.config.vocab_size], seed=[1, 2])

    def run(heads_only):
        with tf.GradientTape() as tape:
            out = model(inputs, training=False, heads_only=heads_only)
            loss = tf.reduce_sum(out["mlm_logits"] * weights) + tf.reduce_sum(
                out["nsp_logits"] * [1.0, -2.0]
            )
        return out, tape.gradient(loss, model.trainable_variables)

    full, full_grads = run(False)
    pruned, pruned_grads = run(True)

    # The last block runs on a [B, 1 + P, H] slice instead of [B, T, H]: the matmul
    # kernels block (and so round) the shorter rows differently, an error of float32
    # rounding of the output's own scale (logits reach ~60 here), hence an absolute
    # tolerance relative to that scale; a wrong row or a skipped term is O(scale).
    def assert_same_up_to_rounding(actual, desired, name):
        scale = float(np.abs(desired).max())
        np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=5e-6 * scale, err_msg=name)

    for key in ("mlm_logits", "nsp_logits", "pooled_output"):
        assert_same_up_to_rounding(pruned[key], full[key], key)
    gathered = tf.gather(full["sequence_output"], positions, batch_dims=1)
    assert_same_up_to_rounding(pruned["sequence_output"], gathered, "sequence_output")
    last_probs = tf.gather(full["attention_scores"][-1], positions, axis=2, batch_dims=1)
    np.testing.assert_allclose(pruned["attention_scores"][-1], last_probs, atol=1e-6)
    for below_full, below_pruned in zip(
        full["encoder_outputs"][:-1], pruned["encoder_outputs"][:-1]
    ):
        np.testing.assert_array_equal(below_pruned, below_full)
    assert [g is None for g in pruned_grads] == [g is None for g in full_grads]
    flat_full, flat_pruned = (
        np.concatenate([tf.reshape(tf.convert_to_tensor(g), [-1]) for g in grads if g is not None])
        for grads in (full_grads, pruned_grads)
    )
    # float32 rounding only: tiny next to the gradient's scale (some gradients,
    # e.g. of the key biases, are 0 in exact arithmetic and rounding noise here)
    scale = np.abs(flat_full).max()
    np.testing.assert_allclose(flat_pruned, flat_full, rtol=1e-4, atol=1e-5 * scale)
    assert np.linalg.norm(flat_pruned - flat_full) < 1e-5 * np.linalg.norm(flat_full)


def test_heads_only_needs_masked_positions():
    model = build_pretrainer(small_config("mobilebert"))
    with pytest.raises(ValueError, match="masked_lm_positions"):
        model(random_inputs(model.config), heads_only=True)
