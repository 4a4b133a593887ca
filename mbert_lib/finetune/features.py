"""Labeled examples -> fixed-length model inputs, BERT's way, with truncation counted.

A single sentence A becomes `[CLS] A [SEP]`, a pair `[CLS] A [SEP] B [SEP]`:

    input_word_ids  int32 [n, T]  token ids, then 0 ([PAD])
    input_mask      int32 [n, T]  1 on the real tokens
    input_type_ids  int32 [n, T]  0 on [CLS] A [SEP], 1 on B [SEP], 0 on padding

When an example has more than T tokens with its special tokens, the end is
cut off: a sentence keeps its first T − 2 tokens; a pair drops the last
token of the longer of A and B until both fit in T − 3 (BERT's
`_truncate_seq_pair`). Truncation is never silent: `EncodedExamples` counts
the truncated examples and keeps every example's untruncated length.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from mbert_lib.data.glue import GlueExample
from mbert_lib.data.tokenizer import WordPieceTokenizer


@dataclasses.dataclass
class EncodedExamples:
    """Model inputs, labels and what truncation did."""

    features: dict[str, np.ndarray]  # the three [n, T] int32 inputs
    labels: np.ndarray  # [n] int32 class ids, or float32 scores
    lengths: np.ndarray  # [n] tokens with [CLS]/[SEP] before truncation
    seq_length: int
    # output distillation (mbert_lib.finetune.task_distill): each example's target
    # distribution q [n, C] and temperature τ [n]; None: the labels are the targets
    targets: np.ndarray | None = None
    temperatures: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def truncated(self) -> int:
        """Examples longer than seq_length, cut to fit."""
        return int(np.sum(self.lengths > self.seq_length))

    def truncation_note(self, what: str = "examples") -> str:
        """A one-line report, e.g. "3 of 872 dev examples (0.3%) truncated to 64 tokens"."""
        n = len(self)
        return (
            f"{self.truncated} of {n} {what} ({self.truncated / max(n, 1):.1%}) longer "
            f"than seq_length {self.seq_length}, truncated (longest: "
            f"{int(self.lengths.max()) if n else 0} tokens)"
        )

    def subset(self, indices) -> EncodedExamples:
        indices = np.asarray(indices, np.int64)
        return EncodedExamples(
            {k: v[indices] for k, v in self.features.items()},
            self.labels[indices],
            self.lengths[indices],
            self.seq_length,
            None if self.targets is None else self.targets[indices],
            None if self.temperatures is None else self.temperatures[indices],
        )

    def with_targets(self, targets: np.ndarray, temperatures: np.ndarray) -> EncodedExamples:
        """The same examples with target distributions q [n, C] and temperatures τ [n]."""
        if targets.shape[0] != len(self) or temperatures.shape != (len(self),):
            raise ValueError(
                f"targets {targets.shape} and temperatures {temperatures.shape} must have one "
                f"row per example ({len(self)})"
            )
        return dataclasses.replace(self, targets=targets, temperatures=temperatures)


def concatenate(parts: Sequence[EncodedExamples]) -> EncodedExamples:
    """The examples of `parts` one after another (all with targets, or none)."""
    with_targets = {p.targets is not None for p in parts}
    if len(with_targets) != 1 or len({p.seq_length for p in parts}) != 1:
        raise ValueError("concatenate: parts must share seq_length and all have targets or none")
    return EncodedExamples(
        {k: np.concatenate([p.features[k] for p in parts]) for k in parts[0].features},
        np.concatenate([p.labels for p in parts]),
        np.concatenate([p.lengths for p in parts]),
        parts[0].seq_length,
        *(
            (
                np.concatenate([p.targets for p in parts]),
                np.concatenate([p.temperatures for p in parts]),
            )
            if with_targets == {True}
            else (None, None)
        ),
    )


def truncate_pair(a: list[int], b: list[int], max_tokens: int) -> tuple[list[int], list[int]]:
    """Drops the last token of the longer list (A on a tie) until len(a) + len(b) <= max."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        (a if len(a) >= len(b) else b).pop()
    return a, b


def encode_examples(
    examples: Sequence[GlueExample],
    tokenizer: WordPieceTokenizer,
    seq_length: int,
    regression: bool = False,
) -> EncodedExamples:
    """Tokenizes and packs `examples` into [n, seq_length] inputs (see the module docstring)."""
    if seq_length < 4:
        raise ValueError(f"seq_length must be >= 4 ([CLS] A [SEP] B [SEP]), got {seq_length}")
    n = len(examples)
    ids_a = tokenizer.encode_batch([e.text_a for e in examples])
    pair = [e.text_b is not None for e in examples]
    ids_b = tokenizer.encode_batch([e.text_b for e in examples if e.text_b is not None])
    word_ids = np.zeros((n, seq_length), np.int32)  # [n, T]
    type_ids = np.zeros((n, seq_length), np.int32)  # [n, T]
    lengths = np.zeros(n, np.int64)
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    b_iter = iter(ids_b)
    for i, a in enumerate(ids_a):
        if pair[i]:
            b = next(b_iter)
            lengths[i] = len(a) + len(b) + 3
            a, b = truncate_pair(a, b, seq_length - 3)
            tokens = [cls, *a, sep, *b, sep]
            type_ids[i, len(a) + 2 : len(tokens)] = 1
        else:
            lengths[i] = len(a) + 2
            tokens = [cls, *a[: seq_length - 2], sep]
        word_ids[i, : len(tokens)] = tokens
    labels = np.asarray([e.label for e in examples], np.float32 if regression else np.int32)
    features = {
        "input_word_ids": word_ids,
        "input_mask": (word_ids != 0).astype(np.int32),
        "input_type_ids": type_ids,
    }
    return EncodedExamples(features, labels, lengths, seq_length)
