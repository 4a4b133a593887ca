"""Structured pruning of FFN units: the scores against NumPy, units that add nothing leave
the outputs as they were, the shapes and parameter count shrink by the closed form."""

import numpy as np
import pytest
import tf_keras

from mbert_lib.compress import structured
from mbert_lib.config import get_preset
from mbert_lib.models import build_encoder, count_params, dummy_inputs

CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=200)


def _encoder(seed=0):
    tf_keras.utils.set_random_seed(seed)
    encoder = build_encoder(CONFIG)
    encoder(dummy_inputs(), training=False)
    return encoder


def test_scores_are_the_norm_bound_computed_in_numpy():
    ffn = structured.feed_forwards(_encoder())[0]
    w1, b1 = ffn.intermediate.kernel.numpy(), ffn.intermediate.bias.numpy()
    w2 = ffn.output_dense.kernel.numpy()
    want = [
        (np.sqrt(np.sum(w1[:, j] ** 2)) + abs(b1[j])) * np.sqrt(np.sum(w2[j] ** 2))
        for j in range(w1.shape[1])
    ]
    np.testing.assert_allclose(structured.unit_scores(ffn), want, rtol=1e-6)
    kept = structured.kept_units(ffn, 5)
    assert list(kept) == sorted(np.argsort(want)[::-1][:5])


def test_units_that_add_nothing_go_first_and_the_outputs_stay():
    encoder = _encoder(seed=1)
    inputs = dummy_inputs()
    size = CONFIG.intermediate_size
    dead = size // 4
    rng = np.random.default_rng(0)
    for ffn in structured.feed_forwards(encoder):  # a different quarter of dead units in each FFN
        units = rng.choice(size, dead, replace=False)
        w2 = ffn.output_dense.kernel.numpy()
        w2[units] = 0.0
        ffn.output_dense.kernel.assign(w2)
    before = encoder(inputs, training=False)["sequence_output"].numpy()
    pruned = structured.prune_ffn_units(encoder, dead / size, build_encoder)
    assert pruned.config.intermediate_size == size - dead
    after = pruned(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_the_pruned_copy_has_the_closed_form_number_of_parameters():
    encoder = _encoder()
    pruned = structured.prune_ffn_units(encoder, 0.5, build_encoder)
    removed = CONFIG.intermediate_size - pruned.config.intermediate_size
    assert removed == CONFIG.intermediate_size // 2
    ffns = CONFIG.num_hidden_layers * CONFIG.num_feedforward_networks
    width = structured.feed_forwards(encoder)[0].intermediate.kernel.shape[
        0
    ]  # the block's inner width
    # per FFN and unit: a column of W_1, its bias, a row of W_2
    assert count_params(encoder) - count_params(pruned) == ffns * removed * (2 * width + 1)
    embedding = [v.numpy() for v in encoder.embedding.weights]
    for a, b in zip(embedding, [v.numpy() for v in pruned.embedding.weights], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [1.0, -0.1, 0.999, "0.5", True])
def test_a_fraction_that_keeps_no_unit_or_is_not_a_fraction_is_refused(bad):
    with pytest.raises(ValueError, match="fraction of FFN units must"):
        structured.units_to_keep(CONFIG.intermediate_size, bad)
