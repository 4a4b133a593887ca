"""Length-grouped fine-tuning batches: cut batches give the full-length outputs; an epoch
still draws each example once; the grouping puts similar lengths together; it resumes."""

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.finetune import trainer
from mbert_lib.finetune.data import padded_length, steps_per_epoch, train_batches
from mbert_lib.finetune.features import EncodedExamples
from mbert_lib.models import INPUT_NAMES, build_classifier
from tests.finetune_fixtures import CONFIG, experiment, save_pretrained, write_sst2

T, B = 48, 8


def encoded(lengths: np.ndarray, seed: int = 0) -> EncodedExamples:
    """Examples of the given lengths; each one's label is its index, to find it in a batch."""
    n = len(lengths)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int32)  # [n, T]
    ids = np.random.default_rng(seed).integers(5, CONFIG.vocab_size, (n, T)) * mask
    features = {
        "input_word_ids": ids.astype(np.int32),
        "input_mask": mask,
        "input_type_ids": np.zeros((n, T), np.int32),
    }
    return EncodedExamples(features, np.arange(n, dtype=np.int32), lengths, T)


def epochs(data: EncodedExamples, length_pool: int, count: int = 2, seed: int = 3):
    """`count` epochs of batches: lists of (example indices [B], input width)."""
    batches = iter(train_batches(data, B, seed, length_pool))
    per_epoch = steps_per_epoch(data, B)
    out = []
    for _ in range(count):
        epoch = [next(batches) for _ in range(per_epoch)]
        out.append([(b["label"].numpy(), b["input_mask"].shape[1]) for b in epoch])
    return out


def test_padded_length_keeps_one_position_past_the_longest_example():
    assert [padded_length(n, 64) for n in (1, 7, 8, 15, 63, 64)] == [8, 8, 16, 16, 64, 64]
    assert int(padded_length(tf.constant(7), 64)) == 8


def test_a_cut_batch_gives_the_outputs_of_the_full_length_batch():
    config = CONFIG.replace(max_position_embeddings=T)
    assert config.trigram_input, "the test needs the trigram embedding's right neighbour"
    model = build_classifier(config, 2, 0.0)
    lengths = np.array([3, 7, 5, 2])
    data = encoded(lengths)
    real = data.features["input_mask"][:, :7] == 1  # [4, 7] the real tokens

    def outputs(width):
        inputs = {k: data.features[k][:, :width] for k in INPUT_NAMES}
        hidden = model.encoder(inputs, training=False)["sequence_output"].numpy()
        return hidden[:, :7][real], model(inputs, training=False)["logits"].numpy()

    full_hidden, full_logits = outputs(T)
    cut_hidden, cut_logits = outputs(padded_length(7, T))
    np.testing.assert_allclose(cut_hidden, full_hidden, atol=1e-5)
    np.testing.assert_allclose(cut_logits, full_logits, atol=1e-5)
    # Cut at the longest example itself, its last token loses its [PAD] right neighbour.
    flush_hidden, _ = outputs(7)
    assert np.abs(flush_hidden - full_hidden).max() > 1e-3


@pytest.mark.parametrize("length_pool", [1, 4])
def test_each_epoch_draws_the_examples_of_the_unpooled_order_once(length_pool):
    lengths = np.random.default_rng(1).integers(3, T + 1, 203)
    data = encoded(lengths)
    plain, pooled = epochs(data, 0), epochs(data, length_pool)
    for plain_epoch, pooled_epoch in zip(plain, pooled, strict=True):
        drawn = np.concatenate([ids for ids, _ in pooled_epoch])
        assert len(set(drawn)) == len(drawn) == steps_per_epoch(data, B) * B
        assert set(drawn) == set(np.concatenate([ids for ids, _ in plain_epoch]))
        for ids, width in pooled_epoch:
            assert width == padded_length(int(lengths[ids].max()), T)
        if length_pool == 1:  # the same batches, only cut
            assert [set(ids) for ids, _ in pooled_epoch] == [set(ids) for ids, _ in plain_epoch]
    assert all(width == T for epoch in plain for _, width in epoch)

    def mean_range(epoch):
        return np.mean([np.ptp(lengths[ids]) for ids, _ in epoch])

    if length_pool == 4:  # sorted within runs of 4 batches: far narrower batches
        assert mean_range(pooled[0]) < 0.5 * mean_range(plain[0])


def test_a_restored_iterator_continues_the_same_batches(tmp_path):
    data = encoded(np.random.default_rng(2).integers(3, T + 1, 100))
    iterator = iter(train_batches(data, B, 0, 4))
    for _ in range(7):
        next(iterator)
    path = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "it"))
    expected = [next(iterator)["label"].numpy() for _ in range(20)]
    resumed = iter(train_batches(data, B, 0, 4))
    tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
    got = [next(resumed)["label"].numpy() for _ in range(20)]
    np.testing.assert_array_equal(np.stack(got), np.stack(expected))


def test_bad_length_pool_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="trainer.length_pool"):
        experiment("m", "d", "trainer.length_pool=-1")
    with pytest.raises(ValueError, match="length_pool"):
        train_batches(encoded(np.full(10, 4)), B, 0, -2)


@pytest.mark.slow
def test_a_tiny_model_learns_from_length_grouped_batches(tmp_path):
    setup = save_pretrained(tmp_path / "pretrained"), write_sst2(tmp_path / "data")
    run = experiment(*setup, "trainer.epochs=3,trainer.length_pool=2")
    record = trainer.run_finetuning(
        run, str(tmp_path / "ft"), show_progress=False, log=lambda _: None
    )
    assert record["eval"]["accuracy"] >= 0.95, record["history"]
