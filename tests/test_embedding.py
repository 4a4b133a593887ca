"""The trigram embedding (paper section 3.1) is a width-3 convolution over the sequence."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib.layers.embedding import MobileBertEmbedding, trigram_concat
from tests.helpers import randomize_affine_weights

B, T, V, E, H, P = 2, 7, 50, 8, 24, 16


def _ids(seed=0):
    rng = np.random.RandomState(seed)
    return (rng.randint(0, V, (B, T)).astype(np.int32), rng.randint(0, 2, (B, T)).astype(np.int32))


def _embedding(**kwargs):
    args = dict(
        vocab_size=V,
        embedding_size=E,
        hidden_size=H,
        max_position_embeddings=P,
        type_vocab_size=2,
        trigram_input=True,
        normalization_type="no_norm",
    )
    layer = MobileBertEmbedding(**{**args, **kwargs})
    word_ids, type_ids = _ids()
    layer(word_ids, type_ids)
    randomize_affine_weights(layer)
    # O(1) token vectors, so the trigram term is not drowned by the position table.
    rng = np.random.RandomState(7)
    table = layer.embedding_table
    table.assign(rng.standard_normal(table.shape).astype(np.float32))
    if layer.needs_projection:
        kernel = layer.embedding_transformation.kernel  # [3E or E, H]
        kernel.assign(
            rng.standard_normal(kernel.shape).astype(np.float32) / np.sqrt(kernel.shape[0])
        )
    return layer


def test_trigram_concat_order_and_zero_ends():
    x = np.arange(1, B * T * 3 + 1, dtype=np.float32).reshape(B, T, 3)  # [B, T, E=3]
    y = trigram_concat(x).numpy()  # [B, T, 9]
    assert y.shape == (B, T, 9)
    for t in range(T):
        np.testing.assert_array_equal(y[:, t, 3:6], x[:, t])
        np.testing.assert_array_equal(y[:, t, 0:3], x[:, t + 1] if t < T - 1 else 0)
        np.testing.assert_array_equal(y[:, t, 6:9], x[:, t - 1] if t > 0 else 0)


def _conv_embedding(layer, word_ids, type_ids, taps):
    """NoNorm(Conv1D_same(table[ids]) + P + S) with the projection split into `taps`."""
    conv = tf_keras.layers.Conv1D(H, 3, padding="same")
    conv.build((None, T, E))
    conv.set_weights([taps, layer.embedding_transformation.bias.numpy()])
    e = layer.embedding_table.numpy()[word_ids]  # [B, T, E]
    x = (
        conv(e).numpy()
        + layer.position_embeddings.embeddings.numpy()[:T]
        + layer.token_type_embeddings.embeddings.numpy()[type_ids]
    )  # [B, T, H]
    return x * layer.norm.gamma.numpy() + layer.norm.beta.numpy()


def test_trigram_embedding_equals_conv1d_same():
    layer = _embedding()
    word_ids, type_ids = _ids(1)
    kernel = layer.embedding_transformation.kernel.numpy()  # [3E, H]
    assert kernel.shape == (3 * E, H)
    # Rows are [e_{t+1}; e_t; e_{t-1}]; Conv1D tap k multiplies x_{t+k-1}.
    taps = kernel.reshape(3, E, H)[::-1]  # [3, E, H]
    expected = _conv_embedding(layer, word_ids, type_ids, taps)
    np.testing.assert_allclose(layer(word_ids, type_ids).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_trigram_embedding_differs_from_conv1d_with_taps_in_the_wrong_order():
    layer = _embedding()
    word_ids, type_ids = _ids(1)
    taps = layer.embedding_transformation.kernel.numpy().reshape(3, E, H)  # not reversed
    wrong = _conv_embedding(layer, word_ids, type_ids, taps)
    assert np.abs(layer(word_ids, type_ids).numpy() - wrong).mean() > 0.1


def test_plain_bert_embedding_has_no_projection():
    layer = _embedding(embedding_size=H, trigram_input=False, normalization_type="layer_norm")
    assert layer.embedding_transformation is None
    word_ids, type_ids = _ids(2)
    x = (
        layer.embedding_table.numpy()[word_ids]
        + layer.position_embeddings.embeddings.numpy()[:T]
        + layer.token_type_embeddings.embeddings.numpy()[type_ids]
    )
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    expected = x * layer.norm.gamma.numpy() + layer.norm.beta.numpy()
    np.testing.assert_allclose(layer(word_ids, type_ids).numpy(), expected, rtol=1e-4, atol=1e-4)


def test_thin_table_without_trigram_is_projected():
    layer = _embedding(trigram_input=False)
    assert layer.embedding_transformation.kernel.shape == (E, H)
    word_ids, type_ids = _ids(3)
    assert layer(word_ids, type_ids).shape == (B, T, H)


def test_shapes_and_shared_table():
    layer = _embedding()
    assert layer.embedding_table.shape == (V, E)
    assert layer.embedding_table is layer.word_embeddings.embeddings
    assert layer.position_embeddings.embeddings.shape == (P, H)
    assert layer.token_type_embeddings.embeddings.shape == (2, H)


def test_dropout_only_in_training():
    layer = _embedding(dropout_rate=0.5)
    word_ids, type_ids = _ids(4)
    a = layer(word_ids, type_ids, training=False).numpy()
    np.testing.assert_array_equal(a, layer(word_ids, type_ids).numpy())
    b = layer(word_ids, type_ids, training=True).numpy()
    assert (b == 0).mean() > 0.3
    kept = b != 0
    np.testing.assert_allclose(b[kept], 2 * a[kept], rtol=1e-5)


def test_too_long_sequence_names_max_position_embeddings():
    layer = _embedding()
    ids = np.ones((1, P + 1), np.int32)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        layer(ids, np.zeros_like(ids))


def test_too_long_sequence_with_unknown_length_fails_at_run_time():
    layer = _embedding()
    spec = tf.TensorSpec([None, None], tf.int32)
    run = tf.function(lambda w, s: layer(w, s), input_signature=[spec, spec])
    ok = np.ones((1, P), np.int32)
    assert run(ok, ok).shape == (1, P, H)
    too_long = np.ones((1, P + 1), np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings"):
        run(too_long, too_long)


def test_config_round_trip_gives_the_same_function():
    layer = _embedding(normalization_type="layer_norm", dropout_rate=0.1)
    word_ids, type_ids = _ids(5)
    clone = MobileBertEmbedding.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone(word_ids, type_ids)
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(
        clone(word_ids, type_ids).numpy(), layer(word_ids, type_ids).numpy()
    )
