"""The `tf.data` input pipeline of pre-training, reading a prepared examples directory.

Each element is a batch dict (B batch, T seq_length, P max_predictions_per_seq):
    input_word_ids       int32   [B, T]   token ids, 0 = [PAD]
    input_mask           int32   [B, T]   1 = real token, 0 = padding
    input_type_ids       int32   [B, T]   0 = [CLS] A [SEP], 1 = B [SEP]
    masked_lm_positions  int32   [B, P]   positions of the MLM targets (0 when unused)
    masked_lm_ids        int32   [B, P]   original token ids there (0 when unused)
    masked_lm_weights    float32 [B, P]   1.0 for a real target, 0.0 for padding
    next_sentence_labels int32   [B]      0 = B is the real next segment, 1 = random
Order is deterministic for a seed (the records were shuffled when written;
the shuffle buffer adds a per-epoch reshuffle), so a resumed run can
restore its position (checkpoint the iterator, or `skip` the steps done).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import tensorflow as tf

from mbert_lib.data.errors import DataError
from mbert_lib.data.tfrecord import parse_batch, read_manifest


@dataclasses.dataclass(frozen=True)
class SplitReading:
    """How `make_pretraining_dataset` reads a split: whether it shuffles, repeats forever
    and drops the last partial batch. None takes the split's default: "train" does all
    three, "eval" none (every example once, in order)."""

    shuffle: bool | None = None
    repeat: bool | None = None
    drop_remainder: bool | None = None

    def resolved(self, training: bool) -> SplitReading:
        """This reading with every None replaced by the default of a training split
        (`training`) or of another one."""
        fields = (self.shuffle, self.repeat, self.drop_remainder)
        return SplitReading(*(training if value is None else value for value in fields))


def make_pretraining_dataset(
    examples_dir: str | os.PathLike,
    batch_size: int,
    *,
    split: str = "train",
    reading: SplitReading = SplitReading(),
    seed: int = 0,
    shuffle_buffer: int = 10_000,
    rows: tuple[int, int] | None = None,
) -> tf.data.Dataset:
    """Batched examples of `split` ("train" or "eval", the held-out documents).

    Defaults (`reading`): "train" shuffles (with `seed`), repeats forever and drops
    the last partial batch; "eval" reads every example once, in order.
    rows=(start, stop): only those rows of every batch of `batch_size` are parsed
    and yielded (one worker's slice of a global batch, mbert_lib.train.workers);
    the records are read, shuffled and batched as for the whole batches.
    """
    examples_dir = Path(examples_dir)
    manifest = read_manifest(examples_dir)
    if split not in manifest["files"]:
        raise DataError(f"{examples_dir}: no split {split!r}; it has {sorted(manifest['files'])}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise DataError(f"batch_size must be a positive integer, got {batch_size!r}")
    reading = reading.resolved(training=split == "train")
    shuffle, repeat, drop_remainder = reading.shuffle, reading.repeat, reading.drop_remainder
    if drop_remainder and manifest["counts"][split] < batch_size:
        raise DataError(
            f"{examples_dir}: split {split!r} has {manifest['counts'][split]} "
            f"examples, fewer than one batch of {batch_size}"
        )
    T, P = manifest["seq_length"], manifest["max_predictions_per_seq"]
    dataset = tf.data.TFRecordDataset(str(examples_dir / manifest["files"][split]))
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if rows is not None:
        start, stop = rows
        if not (drop_remainder and 0 <= start < stop <= batch_size):
            raise DataError(
                f"rows must be (start, stop) with 0 <= start < stop <= batch_size "
                f"({batch_size}) on batches of a fixed size, got {rows!r}"
            )
        dataset = dataset.map(lambda s: s[start:stop])
    dataset = dataset.map(lambda s: parse_batch(s, T, P), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def check_model_compatibility(
    config, *, tokenizer=None, examples_dir: str | os.PathLike | None = None
) -> None:
    """Raises DataError when a model config cannot consume this tokenizer or these examples.

    Checks config.vocab_size == the tokenizer's / the examples' vocabulary
    size, and the examples' seq_length <= config.max_position_embeddings.
    """
    sources = []
    if tokenizer is not None:
        sources.append(("the tokenizer", tokenizer.vocab_size, None))
    if examples_dir is not None:
        manifest = read_manifest(examples_dir)
        sources.append(
            (f"the examples in {examples_dir}", manifest["vocab_size"], manifest["seq_length"])
        )
    for name, vocab_size, seq_length in sources:
        if vocab_size != config.vocab_size:
            raise DataError(
                f"vocab_size mismatch: {name} has {vocab_size} tokens but the model config "
                f"has vocab_size={config.vocab_size}; use a tokenizer of {config.vocab_size} "
                f"tokens (--vocab-size) or set vocab_size={vocab_size} in the model config"
            )
        if seq_length is not None and seq_length > config.max_position_embeddings:
            raise DataError(
                f"seq_length {seq_length} of {name} exceeds the model config's "
                f"max_position_embeddings={config.max_position_embeddings}"
            )
