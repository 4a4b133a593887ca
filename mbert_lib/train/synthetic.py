"""SYNTHETIC pre-training data for smoke tests and unit tests: not text, not for results.

Each example is a sentence pair of counting sequences over the word ids
4..V−1 (ids 0-3 are [PAD], [CLS], [SEP], [MASK]):

    segment A:  a_j = 4 + (s + j) mod (V − 4)         random start s
    segment B:  the continuation of A (NSP label 0) or a count from a
                random start (label 1)

so a masked token is its left neighbour + 1 and "is B next?" compares the
segments' boundary tokens: a model can learn both objectives in a few
hundred steps, which is what a smoke test needs. About 15% of the word
positions (at most P) are replaced by [MASK] (always [MASK]; BERT's 80/10/10
rule lives in the real data pipeline). Lengths vary between T/2 and T so
padding and masks are exercised. Built from tf ops with stateless randomness keyed by
(seed, example index): deterministic, and its iterators are checkpointable.

The batches follow the pre-training dataset contract:
    input_word_ids, input_mask, input_type_ids  int32 [B, T]
    masked_lm_positions, masked_lm_ids          int32 [B, P]
    masked_lm_weights                           float32 [B, P]
    next_sentence_labels                        int32 [B]
"""

from __future__ import annotations

import tensorflow as tf

PAD, CLS, SEP, MASK = 0, 1, 2, 3
FIRST_WORD = 4


def _example(index, seed, seq_length: int, max_predictions: int, vocab_size: int):
    T, P, n = seq_length, max_predictions, vocab_size - FIRST_WORD
    keys = tf.random.experimental.stateless_split(tf.stack([seed, index]), 5)
    length = tf.random.stateless_uniform([], keys[0], T // 2, T + 1, tf.int32)
    len_a = (length - 3) // 2
    start, start_b = (tf.random.stateless_uniform([], keys[i], 0, n, tf.int32) for i in (1, 2))
    is_random = tf.random.stateless_uniform([], keys[3], 0, 2, tf.int32)

    p = tf.range(T)  # [T]
    in_a = (p >= 1) & (p <= len_a)
    in_b = (p >= len_a + 2) & (p < length - 1)
    j_a, j_b = p - 1, p - len_a - 2
    b_start = tf.where(is_random == 1, start_b, start + len_a)
    word_a = FIRST_WORD + tf.math.floormod(start + j_a, n)
    word_b = FIRST_WORD + tf.math.floormod(b_start + j_b, n)
    is_sep = (p == len_a + 1) | (p == length - 1)
    ids = tf.where(in_a, word_a, tf.where(in_b, word_b, tf.where(is_sep, SEP, PAD)))
    ids = tf.where(p == 0, CLS, ids)  # [T]
    mask = tf.cast(p < length, tf.int32)
    type_ids = tf.cast(in_b | (p == length - 1), tf.int32)

    words = in_a | in_b
    num_words = tf.reduce_sum(tf.cast(words, tf.int32))
    count = tf.clip_by_value(
        tf.cast(tf.round(0.15 * tf.cast(num_words, tf.float32)), tf.int32), 1, P
    )
    scores = tf.where(words, tf.random.stateless_uniform([T], keys[4]), -1.0)
    chosen = tf.sort(tf.math.top_k(scores, P).indices[:count])  # [count]
    pad = P - count
    positions = tf.pad(chosen, [[0, pad]])  # [P]
    weights = tf.pad(tf.ones([count], tf.float32), [[0, pad]])
    targets = tf.pad(tf.gather(ids, chosen), [[0, pad]])
    for t in (positions, weights, targets):
        t.set_shape([P])
    masked = tf.tensor_scatter_nd_update(ids, chosen[:, None], tf.fill([count], MASK))
    return {
        "input_word_ids": masked,
        "input_mask": mask,
        "input_type_ids": type_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": targets,
        "masked_lm_weights": weights,
        "next_sentence_labels": is_random,
    }


def synthetic_pretraining_dataset(
    *,
    num_examples: int,
    batch_size: int,
    seq_length: int,
    max_predictions_per_seq: int,
    vocab_size: int,
    seed: int = 0,
    drop_remainder: bool = True,
) -> tf.data.Dataset:
    """`num_examples` SYNTHETIC examples (see the module docstring), batched, in order."""
    if vocab_size < FIRST_WORD + 2:
        raise ValueError(
            f"vocab_size must be >= {FIRST_WORD + 2} for synthetic data, got {vocab_size}"
        )
    if seq_length < 8 or not 1 <= max_predictions_per_seq <= seq_length:
        raise ValueError(
            f"need seq_length >= 8 and 1 <= max_predictions_per_seq <= "
            f"seq_length, got {seq_length} and {max_predictions_per_seq}"
        )
    seed_t = tf.constant(seed, tf.int64)
    return (
        tf.data.Dataset.range(num_examples)
        .map(
            lambda i: _example(i, seed_t, seq_length, max_predictions_per_seq, vocab_size),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        .batch(batch_size, drop_remainder=drop_remainder)
        .prefetch(tf.data.AUTOTUNE)
    )
