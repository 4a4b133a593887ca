"""MLM + NSP example creation on a generated corpus: rates, layout, NSP semantics, seeds.

The generated corpus gives every (document, position) its own token id, so
the unmasked examples can be mapped back to where each token came from:
the NSP labels are checked against the documents, not against the code's
own bookkeeping. Tolerances are 4 binomial standard deviations.
"""

import math
import random

import numpy as np
import pytest

from mbert_lib.data.errors import DataError
from mbert_lib.data.examples import (
    ExampleConfig,
    create_examples,
    example_statistics,
    original_tokens,
)
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer

NUM_DOCS, SPECIAL = 60, len(SPECIAL_TOKENS)


def _corpus(seed=0, num_docs=NUM_DOCS, with_unk=False):
    """Documents of sentences of unique ids: id -> (document, position) via `origin`."""
    rng = np.random.default_rng(seed)
    documents, origin, next_id = [], {}, SPECIAL
    for d in range(num_docs):
        sentences, position = [], 0
        for _ in range(rng.integers(2, 15)):
            sentence = []
            for _ in range(rng.integers(3, 30)):
                origin[next_id] = (d, position)
                sentence.append(next_id)
                next_id, position = next_id + 1, position + 1
            sentences.append(sentence)
        documents.append(sentences)
    if with_unk:  # the second token of every sentence is unknown
        for sentences in documents:
            for sentence in sentences:
                sentence[1] = SPECIAL_TOKENS.index("[UNK]")
    vocab = list(SPECIAL_TOKENS) + [f"w{i}" for i in range(SPECIAL, next_id)]
    return documents, origin, WordPieceTokenizer(vocab)


@pytest.fixture(scope="module")
def generated():
    documents, origin, tokenizer = _corpus(with_unk=True)
    config = ExampleConfig(seq_length=64, max_predictions_per_seq=20, dupe_factor=20, seed=3)
    return documents, origin, tokenizer, config, create_examples(documents, tokenizer, config)


def _originals(examples):
    """input_word_ids with the masked positions restored, row by row (a second code path)."""
    tokens = examples["input_word_ids"].copy()
    for r in range(len(tokens)):
        w = examples["masked_lm_weights"][r] > 0
        tokens[r, examples["masked_lm_positions"][r][w]] = examples["masked_lm_ids"][r][w]
    return tokens


def _within(observed, p, n, sigmas=4.0):
    return abs(observed / n - p) <= sigmas * math.sqrt(p * (1 - p) / n)


def test_contract_dtypes_and_shapes(generated):
    *_, config, ex = generated
    n, T, P = len(ex["next_sentence_labels"]), config.seq_length, config.max_predictions_per_seq
    assert n > 1000
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        assert ex[name].shape == (n, T) and ex[name].dtype == np.int32
    for name in ("masked_lm_positions", "masked_lm_ids"):
        assert ex[name].shape == (n, P) and ex[name].dtype == np.int32
    assert ex["masked_lm_weights"].shape == (n, P) and ex["masked_lm_weights"].dtype == np.float32
    assert ex["next_sentence_labels"].shape == (n,)
    assert set(np.unique(ex["next_sentence_labels"])) == {0, 1}


def test_layout_cls_a_sep_b_sep_then_padding(generated):
    _, _, tok, _, ex = generated
    tokens = _originals(ex)
    for r in range(len(tokens)):
        length = int(ex["input_mask"][r].sum())
        assert (ex["input_mask"][r, :length] == 1).all()
        assert (ex["input_mask"][r, length:] == 0).all()
        assert (tokens[r, length:] == 0).all() and (ex["input_type_ids"][r, length:] == 0).all()
        seps = np.nonzero(tokens[r] == tok.sep_id)[0]
        assert tokens[r, 0] == tok.cls_id and len(seps) == 2 and seps[1] == length - 1
        assert seps[0] >= 2 and seps[1] - seps[0] >= 2, "both segments non-empty"
        types = ex["input_type_ids"][r]
        assert (types[: seps[0] + 1] == 0).all() and (types[seps[0] + 1 : length] == 1).all()


def test_masking_rate_is_15_percent_of_maskable_tokens(generated):
    _, _, tok, config, ex = generated
    tokens = _originals(ex)
    maskable = int((~np.isin(tokens, list(tok.special_ids)) & (ex["input_mask"] == 1)).sum())
    predictions = int(ex["masked_lm_weights"].sum())
    assert _within(predictions, config.masked_lm_prob, maskable), predictions / maskable
    stats = example_statistics(ex, tok)
    assert (stats["maskable"], stats["predictions"]) == (maskable, predictions)
    np.testing.assert_array_equal(original_tokens(ex), tokens)


def test_80_10_10_split(generated):
    _, _, tok, _, ex = generated
    stats = example_statistics(ex, tok)
    n, replacements = stats["predictions"], tok.vocab_size - SPECIAL
    # A random replacement draws the original token with probability 1 / replacements.
    assert _within(stats["replaced_by_mask"], 0.8, n)
    assert _within(stats["replaced_by_random"], 0.1 * (1 - 1 / replacements), n)
    assert _within(stats["kept"], 0.1 + 0.1 / replacements, n)


def test_special_and_unknown_tokens_are_never_targets(generated):
    _, _, tok, _, ex = generated
    targets = ex["masked_lm_ids"][ex["masked_lm_weights"] > 0]
    assert not np.isin(targets, list(tok.special_ids)).any()
    original = _originals(ex)
    rows, slots = np.nonzero(ex["masked_lm_weights"] > 0)
    at_positions = original[rows, ex["masked_lm_positions"][rows, slots]]
    np.testing.assert_array_equal(at_positions, targets)
    assert (original == tok.unk_id).any(), "the corpus has [UNK] tokens to avoid"
    unused = ex["masked_lm_weights"] == 0
    assert (ex["masked_lm_positions"][unused] == 0).all()
    assert (ex["masked_lm_ids"][unused] == 0).all()


def test_random_replacements_are_real_tokens(generated):
    _, _, tok, _, ex = generated
    rows, slots = np.nonzero(ex["masked_lm_weights"] > 0)
    inputs = ex["input_word_ids"][rows, ex["masked_lm_positions"][rows, slots]]
    replaced = inputs[(inputs != tok.mask_id) & (inputs != ex["masked_lm_ids"][rows, slots])]
    assert len(replaced) > 100 and (replaced >= SPECIAL).all()


def test_nsp_is_balanced_and_labels_match_the_documents(generated):
    _, origin, tok, _, ex = generated
    labels = ex["next_sentence_labels"]
    assert _within(int(labels.sum()), 0.5, len(labels))
    tokens = _originals(ex)
    for r in range(len(tokens)):
        seps = np.nonzero(tokens[r] == tok.sep_id)[0]
        a = [origin[t] for t in tokens[r, 1 : seps[0]] if t != tok.unk_id]
        b = [origin[t] for t in tokens[r, seps[0] + 1 : seps[1]] if t != tok.unk_id]
        for segment in (a, b):  # each segment is one contiguous span of one document
            assert len({d for d, _ in segment}) == 1
            gaps = np.diff([p for _, p in segment])  # 2 where an [UNK] was skipped
            assert set(gaps.tolist()) <= {1, 2}
        if labels[r] == 0:
            assert a[0][0] == b[0][0] and a[-1][1] < b[0][1], "B continues A"
        else:
            assert a[0][0] != b[0][0], "B comes from another document"


def test_same_seed_same_examples_different_seed_different():
    documents, _, tokenizer = _corpus(seed=1, num_docs=20)
    config = ExampleConfig(seq_length=32, max_predictions_per_seq=5, dupe_factor=2, seed=7)
    first = create_examples(documents, tokenizer, config)
    again = create_examples(documents, tokenizer, config)
    other = create_examples(documents, tokenizer, ExampleConfig(32, 5, dupe_factor=2, seed=8))
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    n = min(len(first["input_word_ids"]), len(other["input_word_ids"]))
    assert not np.array_equal(first["input_word_ids"][:n], other["input_word_ids"][:n])


def test_max_predictions_caps_and_short_sequences_occur():
    documents, _, tokenizer = _corpus(seed=2, num_docs=30)
    config = ExampleConfig(
        seq_length=128, max_predictions_per_seq=4, short_seq_prob=0.5, dupe_factor=3, seed=1
    )
    ex = create_examples(documents, tokenizer, config)
    per_row = ex["masked_lm_weights"].sum(axis=1)
    assert per_row.max() == 4 and (per_row <= 4).all()
    lengths = ex["input_mask"].sum(axis=1)
    assert lengths.max() <= 128 and lengths.min() < 64


def test_bad_configs_and_corpora_raise():
    with pytest.raises(DataError, match="seq_length"):
        ExampleConfig(seq_length=4)
    with pytest.raises(DataError, match="max_predictions_per_seq"):
        ExampleConfig(seq_length=16, max_predictions_per_seq=14)
    with pytest.raises(DataError, match="masked_lm_prob"):
        ExampleConfig(masked_lm_prob=1.5)
    documents, _, tokenizer = _corpus(num_docs=1)
    with pytest.raises(DataError, match="at least 2"):
        create_examples(documents, tokenizer, ExampleConfig(32, 5))


def _truncate_one_token_at_a_time(a, b, max_tokens, rng):
    """BERT's create_pretraining_data.truncate_seq_pair, as written there."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


@pytest.mark.parametrize("seed", range(5))
def test_truncation_cuts_what_bert_cuts_and_draws_the_same_numbers(seed):
    from mbert_lib.data.examples import _truncate_pair

    sizes = random.Random(seed)
    a, b = list(range(sizes.randint(0, 300))), list(range(1000, 1000 + sizes.randint(0, 300)))
    expected_a, expected_b = list(a), list(b)
    ours, theirs = random.Random(seed + 10), random.Random(seed + 10)
    _truncate_pair(a, b, 125, ours)
    _truncate_one_token_at_a_time(expected_a, expected_b, 125, theirs)
    assert (a, b) == (expected_a, expected_b)
    assert ours.random() == theirs.random()  # the same number of draws


def test_one_huge_line_is_cut_to_one_window_of_it():
    """200k tokens (one token at a time from the front: seconds; here one slice)."""
    from mbert_lib.data.examples import _truncate_pair

    a, b = list(range(200_000)), [1, 2, 3]
    _truncate_pair(a, b, 125, random.Random(0))
    assert len(a) + len(b) == 125 and b == [1, 2, 3]
    assert a == list(range(a[0], a[0] + len(a)))  # one contiguous window of the line
