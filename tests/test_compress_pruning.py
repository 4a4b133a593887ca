"""Magnitude pruning through tfmot on our subclassed classifier: the schedule against its
closed form, the masks against NumPy's magnitude ranking, the final sparsity after
fine-tuning, and the plain model that `strip` gives back."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib.compress import pruning
from mbert_lib.compress.size import gzip_bytes
from mbert_lib.config import get_preset
from mbert_lib.export.tflite import export_tflite
from mbert_lib.models import build_classifier, dummy_inputs

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

CONFIG = get_preset("tiny_student").replace(num_hidden_layers=2, vocab_size=200)


def _classifier(seed: int = 0):
    tf_keras.utils.set_random_seed(seed)
    return build_classifier(CONFIG, num_classes=2)


def _batch(n: int = 8, seq_length: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)
    inputs = {
        "input_word_ids": rng.integers(1, CONFIG.vocab_size, (n, seq_length)).astype(np.int32),
        "input_mask": np.ones((n, seq_length), np.int32),
        "input_type_ids": np.zeros((n, seq_length), np.int32),
    }
    return inputs, rng.integers(0, 2, n).astype(np.int32)


def test_the_schedule_is_tfmots_polynomial_decay():
    schedule = pruning.Schedule(final=0.75, begin=10, end=110, initial=0.1, frequency=1)
    tfmot_schedule = schedule.tfmot()
    for step in (10, 20, 60, 109, 110):
        _, sparsity = tfmot_schedule(tf.constant(step, tf.int64))
        assert float(sparsity) == pytest.approx(schedule.sparsity_at(step), abs=1e-6), step
    assert schedule.sparsity_at(10) == pytest.approx(0.1)
    assert schedule.sparsity_at(110) == pytest.approx(0.75)
    assert schedule.sparsity_at(60) == pytest.approx(0.75 + (0.1 - 0.75) * 0.5**3)


@pytest.mark.parametrize("bad", [1.0, -0.1, 1.5, "0.5", True, None])
def test_a_sparsity_outside_zero_one_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match=r"final sparsity must be a number in \[0, 1\)"):
        pruning.Schedule(final=bad)


def test_every_kernel_of_every_block_is_a_target_and_nothing_else():
    model = _classifier()
    targets = pruning.pruning_targets(model)
    # per MobileBERT block: bottleneck in and attention, Q, K, V, the attention output,
    # two dense layers in each of the four FFNs, the bottleneck out
    assert len(targets) == CONFIG.num_hidden_layers * (2 + 4 + 2 * 4 + 1)
    names = {getattr(owner, name).kernel.name for owner, name in targets}
    assert not any("embeddings" in n or "classifier_head" in n or "pooler" in n for n in names)


def test_one_masking_call_keeps_the_largest_magnitudes_as_numpy_ranks_them():
    model = _classifier()
    kernels = {
        getattr(o, n).kernel.name: getattr(o, n).kernel.numpy()
        for o, n in pruning.pruning_targets(model)
    }
    schedule = pruning.Schedule(final=0.5, initial=0.5, begin=0, end=10, frequency=1)
    inputs, _ = _batch()
    pruning.wrap_kernels(model, schedule, inputs)
    model(inputs, training=True)  # step 1: masks computed and applied
    assert pruning.strip(model) == len(kernels)
    for owner, name in pruning.pruning_targets(model):
        layer = getattr(owner, name)
        assert isinstance(layer, pruning.KERNELS)
        want = kernels[layer.kernel.name] * pruning.magnitude_mask(kernels[layer.kernel.name], 0.5)
        np.testing.assert_array_equal(layer.kernel.numpy(), want, err_msg=layer.kernel.name)


def test_fine_tuning_reaches_the_final_sparsity_and_strip_keeps_the_outputs():
    model = _classifier(seed=1)
    inputs, labels = _batch(seed=1)
    steps = 12
    schedule = pruning.Schedule(final=0.8, begin=0, end=steps - 2, frequency=2)
    pruning.wrap_kernels(model, schedule, inputs)
    optimizer = tf_keras.optimizers.Adam(1e-3)
    loss_fn = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)["logits"])
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(steps):
        step(inputs, labels)
    wrapped_logits = model(inputs, training=False)["logits"].numpy()
    pruning.strip(model)
    assert pruning.overall_sparsity(model) == pytest.approx(0.8, abs=0.01)
    assert all(s == pytest.approx(0.8, abs=0.02) for s in pruning.kernel_sparsity(model).values())
    np.testing.assert_allclose(model(inputs, training=False)["logits"].numpy(), wrapped_logits)
    # the stripped model is the plain classifier again: it saves and computes as one
    assert not any(
        isinstance(getattr(o, n), pruning.PruneLowMagnitude)
        for o, n in pruning.pruning_targets(model)
    )
    model(dummy_inputs(), training=False)


def test_wrapping_twice_is_refused():
    model = _classifier()
    pruning.wrap_kernels(model, pruning.Schedule(final=0.5))
    with pytest.raises(ValueError, match="already wrapped"):
        pruning.wrap_kernels(model, pruning.Schedule(final=0.5))


def test_the_zeros_pay_off_in_the_gzipped_tflite_not_in_the_file(tmp_path):
    import gzip

    dense, pruned = _classifier(seed=2), _classifier(seed=2)
    schedule = pruning.Schedule(final=0.8, initial=0.8, begin=0, end=10, frequency=1)
    inputs, _ = _batch(seed=2)
    pruning.wrap_kernels(pruned, schedule, inputs)
    pruned(inputs, training=True)
    pruning.strip(pruned)
    sizes = {}
    for name, model in (("dense", dense), ("pruned", pruned)):
        path = tmp_path / f"{name}.tflite"
        export_tflite(model, path, "fp32", seq_length=16)
        raw = path.read_bytes()
        assert gzip_bytes(path) == len(gzip.compress(raw, compresslevel=9, mtime=0))
        sizes[name] = (len(raw), gzip_bytes(path))
    assert abs(sizes["pruned"][0] - sizes["dense"][0]) < 0.01 * sizes["dense"][0]  # same shapes
    assert sizes["pruned"][1] < 0.75 * sizes["dense"][1], sizes


def test_pruning_once_one_block_masks_that_block_as_numpy_does_and_leaves_the_others():
    model = _classifier(seed=3)
    before = {v.name: v.numpy() for v in model.weights}
    inputs, _ = _batch(seed=3)
    pruning.prune_once(model, 0.75, block=1, inputs=inputs)
    inside = {getattr(o, n).kernel.name for o, n in pruning.pruning_targets(model, block=1)}
    assert inside and len(inside) == len(pruning.pruning_targets(model)) // 2
    for v in model.weights:
        want = before[v.name]
        if v.name in inside:
            want = want * pruning.magnitude_mask(want, 0.75)
        np.testing.assert_array_equal(v.numpy(), want, err_msg=v.name)
    with pytest.raises(ValueError, match=r"block must be an index in \[0, 2\), got 2"):
        pruning.prune_once(model, 0.5, block=2)
