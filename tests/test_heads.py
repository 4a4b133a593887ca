"""Output heads: the masked-LM head with its tied, padded output table; NSP; classifier."""

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.layers.heads import ClassificationHead, MaskedLMHead, NextSentenceHead
from mbert_lib.models import build_pretrainer
from tests.helpers import random_inputs, randomize_affine_weights, small_config
from tests.numpy_reference import activation

B, T, V, E, H, P = 2, 7, 40, 8, 24, 3


def _arrays(seed=0):
    rng = np.random.RandomState(seed)
    sequence = rng.standard_normal((B, T, H)).astype(np.float32)  # [B, T, H]
    table = rng.standard_normal((V, E)).astype(np.float32)  # [V, E]
    positions = np.array([[0, 3, 6], [2, 2, 5]], np.int32)  # [B, P]
    return sequence, table, positions


def _mlm(embedding_size=E, act="relu"):
    sequence, _, positions = _arrays()
    head = MaskedLMHead(V, H, embedding_size, activation=act)
    head(sequence, np.ones((V, embedding_size), np.float32), positions)
    randomize_affine_weights(head)
    return head


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_mlm_logits_match_numpy(act):
    head = _mlm(act=act)
    sequence, table, positions = _arrays(1)
    logits = head(sequence, table, positions).numpy()  # [B, P, V]
    assert logits.shape == (B, P, V)
    x = np.take_along_axis(sequence, positions[..., None], axis=1)  # [B, P, H]
    z = activation(act, x @ head.transform.kernel.numpy() + head.transform.bias.numpy())
    z = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-12)
    z = z * head.transform_norm.gamma.numpy() + head.transform_norm.beta.numpy()
    full_table = np.concatenate([table, head.extra_output_weights.numpy()], axis=1)  # [V, H]
    expected = z @ full_table.T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


def test_mlm_without_positions_scores_every_token():
    head = _mlm()
    sequence, table, positions = _arrays(2)
    every = head(sequence, table).numpy()  # [B, T, V]
    assert every.shape == (B, T, V)
    picked = np.take_along_axis(every, positions[..., None], axis=1)
    np.testing.assert_allclose(
        head(sequence, table, positions).numpy(), picked, rtol=1e-5, atol=1e-5
    )


def test_extra_output_weights_pad_the_table_to_hidden_size():
    assert _mlm().extra_output_weights.shape == (V, H - E)
    assert _mlm(embedding_size=H).extra_output_weights is None
    with pytest.raises(ValueError, match="embedding_size"):
        MaskedLMHead(V, H, H + 1)


def test_mlm_loss_gradient_reaches_the_shared_embedding_table():
    config = small_config("tiny_student")
    model = build_pretrainer(config)
    table = model.encoder.embedding_table
    assert table.shape == (config.vocab_size, config.embedding_size)
    assert sum(tuple(w.shape) == tuple(table.shape) for w in model.weights) == 1  # tied
    assert model.masked_lm.extra_output_weights.shape == (
        config.vocab_size,
        config.hidden_size - config.embedding_size,
    )
    inputs = random_inputs(config, seq=6, pads=(0,))
    present = np.unique(inputs["input_word_ids"])
    inputs["masked_lm_positions"] = np.array([[1, 4], [0, 2]], np.int32)
    labels = np.array([[5, 7], [9, 11]], np.int32)
    with tf.GradientTape() as tape:
        logits = model(inputs)["mlm_logits"]  # [B, P, V]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grad = tf.convert_to_tensor(tape.gradient(loss, table)).numpy()  # [V, E]
    absent = np.setdiff1d(np.arange(config.vocab_size), present)
    # Rows of tokens that are not in the input get gradient only through the output layer.
    assert np.all(np.abs(grad[absent]).sum(-1) > 0)


def test_next_sentence_head_is_a_two_way_linear_map():
    head = NextSentenceHead()
    pooled = np.random.RandomState(3).standard_normal((B, H)).astype(np.float32)
    head(pooled)
    randomize_affine_weights(head)
    expected = pooled @ head.dense.kernel.numpy() + head.dense.bias.numpy()
    assert head.dense.kernel.shape == (H, 2)
    np.testing.assert_allclose(head(pooled).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_classification_head_numerics_and_dropout():
    head = ClassificationHead(3, dropout_rate=0.5)
    pooled = np.random.RandomState(4).standard_normal((B, H)).astype(np.float32)
    head(pooled)
    randomize_affine_weights(head)
    expected = pooled @ head.dense.kernel.numpy() + head.dense.bias.numpy()
    np.testing.assert_allclose(head(pooled).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert np.abs(head(pooled, training=True).numpy() - expected).max() > 1e-3
    with pytest.raises(ValueError, match="num_classes"):
        ClassificationHead(0)


@pytest.mark.parametrize(
    "make, args",
    [
        (lambda: MaskedLMHead(V, H, E, "gelu", 0.05, name="mlm"), lambda: list(_arrays())),
        (lambda: NextSentenceHead(0.05, name="nsp"), lambda: [_arrays()[0][:, 0]]),
        (lambda: ClassificationHead(5, 0.2, 0.05, name="cls"), lambda: [_arrays()[0][:, 0]]),
    ],
    ids=["MaskedLMHead", "NextSentenceHead", "ClassificationHead"],
)
def test_config_round_trip_gives_the_same_function(make, args):
    layer = make()
    inputs = args()
    layer(*inputs)
    randomize_affine_weights(layer)
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone(*inputs)
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(clone(*inputs).numpy(), layer(*inputs).numpy())
