"""A TF-Hub-style preprocessing SavedModel: raw strings -> the encoder's three inputs.

    preprocess = tf.saved_model.load(PATH)
    inputs = preprocess(tf.constant(["hello world"]))       # one segment, seq_length from export
    # {"input_word_ids", "input_mask", "input_type_ids"}: int32 [B, seq_length]

    tokens = preprocess.tokenize(tf.constant(["hello world"]))   # int32 Ragged [B, words, pieces]
    inputs = preprocess.bert_pack_inputs([tokens_a, tokens_b], tf.constant(64))

Packing follows BERT: [CLS] a [SEP] (b [SEP]), type id 0 for the first
segment and its [CLS]/[SEP], 1 for the second; segments are trimmed round
robin to fit seq_length; padding with [PAD], mask 0. Tokenization is
tensorflow_text's BertTokenizer (basic tokenizer + WordPiece, lower-casing and
accent stripping when do_lower_case) on the vocab, which the SavedModel
carries as an asset.
"""

from __future__ import annotations

import os

import tensorflow as tf
import tensorflow_text as text

from mbert_lib import atomic

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


def read_vocab(vocab_file: str | os.PathLike) -> list[str]:
    """The vocabulary, one token per line (line number = id); checks duplicates and specials."""
    with open(vocab_file, encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    seen, duplicates = set(), []
    for token in vocab:
        if token in seen:
            duplicates.append(token)
        seen.add(token)
    if duplicates:
        raise ValueError(f"{vocab_file}: duplicate token(s) {duplicates[:10]}")
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise ValueError(f"{vocab_file}: the vocabulary lacks {missing}")
    return vocab


def read_model_vocab(vocab_file: str | os.PathLike, vocab_size: int) -> list[str]:
    """`read_vocab`, refused unless it has the model's `vocab_size` tokens."""
    vocab = read_vocab(vocab_file)
    if len(vocab) != vocab_size:
        raise ValueError(
            f"{vocab_file} has {len(vocab)} tokens, the model's vocab_size is {vocab_size}"
        )
    return vocab


class Preprocessor(tf.Module):
    """Tokenizer and packer as tf.functions, savable with tf.saved_model.save."""

    def __init__(self, vocab_file: str, do_lower_case: bool, seq_length: int = 128):
        super().__init__(name="preprocessor")

        if seq_length < 3:
            raise ValueError(f"seq_length must be >= 3 ([CLS] x [SEP]), got {seq_length}")
        vocab = read_vocab(vocab_file)
        self.seq_length = seq_length
        self._ids = {t: vocab.index(t) for t in SPECIAL_TOKENS}
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
        table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                vocab_file,
                tf.string,
                tf.lookup.TextFileIndex.WHOLE_LINE,
                tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER,
            ),
            default_value=-1,
        )
        self.tokenizer = text.BertTokenizer(
            table, lower_case=do_lower_case, token_out_type=tf.int64, unknown_token="[UNK]"
        )

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, sentences):
        """Strings [B] -> word-piece ids, int32 Ragged [B, (words), (pieces)]."""
        return tf.cast(self.tokenizer.tokenize(sentences), tf.int32)

    def pack(self, segments, seq_length):
        """Tokenized segments (1 or 2, from `tokenize`) -> the three inputs [B, seq_length]."""

        flat = [s.merge_dims(-2, -1) for s in segments]  # [B, (tokens)] each
        budget = seq_length - len(flat) - 1  # [CLS] + one [SEP] each
        trimmed = text.RoundRobinTrimmer(max_seq_length=budget).trim(flat)
        ids, type_ids = text.combine_segments(
            trimmed, start_of_sequence_id=self._ids["[CLS]"], end_of_segment_id=self._ids["[SEP]"]
        )
        word_ids, mask = text.pad_model_inputs(
            ids, max_seq_length=seq_length, pad_value=self._ids["[PAD]"]
        )
        type_ids, _ = text.pad_model_inputs(type_ids, max_seq_length=seq_length)
        return {
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(type_ids, tf.int32),
        }

    @tf.function
    def bert_pack_inputs(self, segments, seq_length):
        """1 or 2 tokenized segments (from `tokenize`), scalar seq_length -> inputs [B, T]."""
        return self.pack(segments, seq_length)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, sentences):
        """Strings [B] -> the three encoder inputs, int32 [B, seq_length]."""
        return self.pack([self.tokenize(sentences)], self.seq_length)

    def trace(self) -> None:
        """Traces bert_pack_inputs for one and two segments (before saving)."""
        segment = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
        for n in (1, 2):
            self.bert_pack_inputs.get_concrete_function([segment] * n, tf.TensorSpec([], tf.int32))


def export_preprocessing(
    vocab_file: str | os.PathLike,
    export_path: str | os.PathLike,
    do_lower_case: bool = True,
    seq_length: int = 128,
    overwrite: bool = False,
) -> None:
    """Writes the preprocessing SavedModel to `export_path` atomically."""

    module = Preprocessor(os.fspath(vocab_file), do_lower_case, seq_length)
    module.trace()
    with atomic.atomic_directory(export_path, overwrite=overwrite) as tmp:
        tf.saved_model.save(module, tmp, signatures={"serving_default": module.__call__})
