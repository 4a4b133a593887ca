"""BERT pre-training examples: masked LM + next-sentence prediction (Devlin et al., 2019).

A Python port of the logic of BERT's `create_pretraining_data.py`, on token
ids, with `random.Random(seed)` as the only source of randomness (same seed,
same examples on every machine):

Packing (per document, `dupe_factor` passes over the corpus):
  * target length T - 3 tokens ([CLS] A [SEP] B [SEP]); with probability
    `short_seq_prob` a shorter random target in [2, T - 3] for the document;
  * whole sentences accumulate into a chunk until the target is reached; a
    random split point cuts the chunk into segment A and the rest;
  * NSP: with probability 1/2 B is a run of sentences from a random *other*
    document, label 1, and the unused sentences go back to be read again;
    else B is the rest of the chunk, label 0. A chunk of a single sentence
    has no "rest": BERT then always takes a random B, which tilts the labels
    (53.7% random on our WikiText-2 + SST-2 corpus); here that sentence is cut at
    a random token instead (BERT's segments are spans of text, not
    linguistic sentences), so the labels stay 50/50 in expectation;
  * the longer segment is truncated (front or back, at random) until
    len(A) + len(B) <= T - 3, so no example is ever too long.
Masking (static: decided once per example here, as in BERT; `dupe_factor`
gives each text several different masks):
  * min(max_predictions_per_seq, floor(masked_lm_prob * C + u)), u ~ U[0, 1),
    of the C candidate positions are chosen at random; candidates are all
    positions except special tokens: [CLS], [SEP], [PAD] never, and not
    [UNK] either (an unknown word has nothing to recover). The stochastic
    rounding makes the expected count exactly masked_lm_prob * C; BERT's
    max(1, round(masked_lm_prob * len(tokens))) counts the 3 special
    positions too (19 targets among the 125 maskable tokens of a full
    128-token sequence: 15.2%) and forces one into the shortest ones;
  * each chosen token becomes [MASK] with probability 0.8, a random
    non-special token with 0.1, stays itself with 0.1.

Shapes: T seq_length, P max_predictions_per_seq, n examples. The arrays
follow the element contract of the pre-training input pipeline:
    input_word_ids int32 [n, T], input_mask int32 [n, T], input_type_ids int32 [n, T],
    masked_lm_positions int32 [n, P], masked_lm_ids int32 [n, P],
    masked_lm_weights float32 [n, P], next_sentence_labels int32 [n]
padded with 0 (weights 0.0 on unused prediction slots); next_sentence_labels
0 = B is the real next segment, 1 = B is random.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from mbert_lib.data.errors import DataError
from mbert_lib.data.text import Document
from mbert_lib.experiment import DataSection

TokenDocument = list[list[int]]  # sentences of token ids

FEATURES = {
    "input_word_ids": np.int32,
    "input_mask": np.int32,
    "input_type_ids": np.int32,
    "masked_lm_positions": np.int32,
    "masked_lm_ids": np.int32,
    "masked_lm_weights": np.float32,
    "next_sentence_labels": np.int32,
}
MASK_PROB, RANDOM_PROB = 0.8, 0.1  # of the chosen positions; the remaining 0.1 keep their token


@dataclasses.dataclass(frozen=True)
class ExampleConfig:
    """How examples are cut and masked (BERT's flags of the same names); the defaults are
    the experiment schema's (`experiment.DataSection`)."""

    seq_length: int = DataSection.seq_length
    max_predictions_per_seq: int = DataSection.max_predictions_per_seq
    masked_lm_prob: float = DataSection.masked_lm_prob
    short_seq_prob: float = 0.1
    dupe_factor: int = DataSection.dupe_factor
    seed: int = DataSection.seed

    def __post_init__(self):
        for name in ("seq_length", "max_predictions_per_seq", "dupe_factor", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise DataError(f"{name} must be an integer, got {value!r}")
        if self.seq_length < 5:
            raise DataError(
                f"seq_length must be >= 5 ([CLS] A [SEP] B [SEP]), got {self.seq_length}"
            )
        if not 1 <= self.max_predictions_per_seq <= self.seq_length - 3:
            raise DataError(
                f"max_predictions_per_seq must be in [1, seq_length - 3 = "
                f"{self.seq_length - 3}], got {self.max_predictions_per_seq}"
            )
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise DataError(f"masked_lm_prob must be in (0, 1), got {self.masked_lm_prob}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise DataError(f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
        if self.dupe_factor < 1:
            raise DataError(f"dupe_factor must be >= 1, got {self.dupe_factor}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def tokenize_documents(tokenizer, documents: Sequence[Document]) -> list[TokenDocument]:
    """Sentences -> token ids; empty sentences and documents dropped.

    A special token spelled out in the text (e.g. a literal "[SEP]") would
    break the example layout, so every special id except [UNK] becomes [UNK].
    """
    sentences = [s for d in documents for s in d]
    encoded = iter(tokenizer.encode_batch(sentences))
    unk, forbidden = tokenizer.unk_id, tokenizer.special_ids - {tokenizer.unk_id}
    result = []
    for document in documents:
        token_doc = []
        for _ in document:
            ids = [unk if t in forbidden else t for t in next(encoded)]
            if ids:
                token_doc.append(ids)
        if token_doc:
            result.append(token_doc)
    return result


def _truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: random.Random) -> None:
    """Trims the longer segment, at its front or back at random, until both fit (in place).

    One token at a time as BERT's create_pretraining_data does (the same random draws),
    counting the cuts first and slicing once: linear in the segments' length, where
    deleting from a list's front each time is quadratic (minutes for one huge line).
    """
    segments, lengths, cuts = (a, b), [len(a), len(b)], [[0, 0], [0, 0]]  # cuts: front, back
    while lengths[0] + lengths[1] > max_tokens:
        longer = 0 if lengths[0] > lengths[1] else 1
        cuts[longer][0 if rng.random() < 0.5 else 1] += 1
        lengths[longer] -= 1
    for segment, (front, back) in zip(segments, cuts):
        segment[:] = segment[front : len(segment) - back]


def _split_sentence(tokens: list[int], rng: random.Random) -> tuple[list[int], list[int]]:
    """A one-sentence chunk cut at a random token: B is the true continuation of A."""
    cut = rng.randint(1, len(tokens) - 1)
    return tokens[:cut], tokens[cut:]


def _segment_pairs(
    docs: list[TokenDocument],
    index: int,
    max_tokens: int,
    short_seq_prob: float,
    rng: random.Random,
) -> Iterator[tuple[list, list, int]]:
    """(A, B, is_random_next) pairs from document `index` (BERT's packing)."""
    document = docs[index]
    target = max_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_tokens)
    chunk, length, i = [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            a = [t for sentence in chunk[:a_end] for t in sentence]
            b: list[int] = []
            is_random = int(rng.random() < 0.5 or (len(chunk) == 1 and len(a) < 2))
            if is_random:
                other = rng.randrange(len(docs) - 1)
                other = docs[other + (other >= index)]  # any document but this one
                for sentence in other[rng.randrange(len(other)) :]:
                    b.extend(sentence)
                    if len(b) >= target - len(a):
                        break
                i -= len(chunk) - a_end  # the unused sentences are read again
            elif len(chunk) == 1:
                a, b = _split_sentence(a, rng)
            else:
                b = [t for sentence in chunk[a_end:] for t in sentence]
            _truncate_pair(a, b, max_tokens, rng)
            yield a, b, is_random
            chunk, length = [], 0
        i += 1


def _mask(
    tokens: list[int],
    special: frozenset[int],
    replacements: list[int],
    mask_id: int,
    config: ExampleConfig,
    rng: random.Random,
) -> tuple[list[int], list[int], list[int]]:
    """Chooses and corrupts MLM positions; returns (inputs, positions, original ids)."""
    candidates = [i for i, t in enumerate(tokens) if t not in special]
    rng.shuffle(candidates)
    expected = len(candidates) * config.masked_lm_prob
    count = min(config.max_predictions_per_seq, int(expected + rng.random()))  # E = p * C
    inputs = list(tokens)
    for position in candidates[:count]:
        u = rng.random()
        if u < MASK_PROB:
            inputs[position] = mask_id
        elif u < MASK_PROB + RANDOM_PROB:
            inputs[position] = replacements[rng.randrange(len(replacements))]
    positions = sorted(candidates[:count])
    return inputs, positions, [tokens[p] for p in positions]


def create_examples(
    documents: Sequence[TokenDocument], tokenizer, config: ExampleConfig, progress: bool = False
) -> dict[str, np.ndarray]:
    """Masked-LM + NSP examples from tokenized documents (see the module docstring).

    `tokenizer` supplies the special ids ([CLS], [SEP], [MASK], ...) and the
    vocabulary size. Returns the arrays of the element contract, examples
    shuffled (deterministically for `config.seed`).
    """
    docs = [d for d in documents if d]
    if len(docs) < 2:
        raise DataError(
            f"next-sentence prediction needs at least 2 non-empty documents, got {len(docs)}"
        )
    if tokenizer.pad_id != 0:
        raise DataError(f"the tokenizer's [PAD] id must be 0, got {tokenizer.pad_id}")
    special = tokenizer.special_ids
    replacements = [i for i in range(tokenizer.vocab_size) if i not in special]
    cls, sep, mask_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id
    T, P = config.seq_length, config.max_predictions_per_seq
    rng = random.Random(config.seed)
    rows = []
    passes = tqdm(
        total=config.dupe_factor * len(docs), disable=not progress, unit="doc", desc="examples"
    )
    for _ in range(config.dupe_factor):
        for index in range(len(docs)):
            for a, b, is_random in _segment_pairs(docs, index, T - 3, config.short_seq_prob, rng):
                tokens = [cls] + a + [sep] + b + [sep]
                inputs, positions, labels = _mask(
                    tokens, special, replacements, mask_id, config, rng
                )
                rows.append((inputs, len(a) + 2, positions, labels, is_random))
            passes.update()
    passes.close()
    rng.shuffle(rows)
    return _to_arrays(rows, T, P)


def _to_arrays(rows: list, T: int, P: int) -> dict[str, np.ndarray]:
    n = len(rows)
    out = {
        name: np.zeros((n, P) if "masked" in name else (n, T), dtype)
        for name, dtype in FEATURES.items()
        if name != "next_sentence_labels"
    }
    out["next_sentence_labels"] = np.zeros((n,), np.int32)
    for r, (inputs, len_a, positions, labels, is_random) in enumerate(rows):
        out["input_word_ids"][r, : len(inputs)] = inputs  # [T]
        out["input_mask"][r, : len(inputs)] = 1
        out["input_type_ids"][r, len_a : len(inputs)] = 1  # segment B and its [SEP]
        out["masked_lm_positions"][r, : len(positions)] = positions  # [P]
        out["masked_lm_ids"][r, : len(labels)] = labels
        out["masked_lm_weights"][r, : len(labels)] = 1.0
        out["next_sentence_labels"][r] = is_random
    return out


def original_tokens(examples: dict[str, np.ndarray]) -> np.ndarray:
    """input_word_ids [n, T] with the MLM targets put back at their positions."""
    tokens = examples["input_word_ids"].copy()
    rows, slots = np.nonzero(examples["masked_lm_weights"] > 0)  # [M], [M]
    positions = examples["masked_lm_positions"][rows, slots]
    tokens[rows, positions] = examples["masked_lm_ids"][rows, slots]
    return tokens


def example_statistics(examples: dict[str, np.ndarray], tokenizer) -> dict[str, int]:
    """Counts behind the masking and NSP rates, computed from the arrays alone.

    maskable: real tokens that are not special ([CLS], [SEP], [UNK], ...).
    A random replacement that happens to draw the original token counts as
    "kept" here (probability 1 / number of non-special tokens).
    """
    weights = examples["masked_lm_weights"] > 0  # [n, P]
    rows, slots = np.nonzero(weights)
    inputs = examples["input_word_ids"][rows, examples["masked_lm_positions"][rows, slots]]
    labels = examples["masked_lm_ids"][rows, slots]
    mask_id = tokenizer.mask_id
    maskable = (examples["input_mask"] == 1) & ~np.isin(
        original_tokens(examples), list(tokenizer.special_ids)
    )
    return {
        "examples": int(len(examples["next_sentence_labels"])),
        "tokens": int(examples["input_mask"].sum()),
        "maskable": int(maskable.sum()),
        "predictions": int(weights.sum()),
        "replaced_by_mask": int((inputs == mask_id).sum()),
        "kept": int(((inputs == labels) & (inputs != mask_id)).sum()),
        "replaced_by_random": int(((inputs != labels) & (inputs != mask_id)).sum()),
        "random_next": int(examples["next_sentence_labels"].sum()),
    }
