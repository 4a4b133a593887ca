"""[CLS] A [SEP] (B [SEP]) packing with type ids, and truncation that is counted, not silent."""

import numpy as np
import pytest

from mbert_lib.data.glue import GlueExample
from mbert_lib.finetune.features import encode_examples, truncate_pair
from tests.finetune_fixtures import tokenizer

TOK = tokenizer()


def ids(text):
    return TOK.encode(text)


def test_single_sentence_packing():
    encoded = encode_examples([GlueExample("the movie was good", None, 1)], TOK, 8)
    cls, sep = TOK.cls_id, TOK.sep_id
    np.testing.assert_array_equal(
        encoded.features["input_word_ids"][0], [cls, *ids("the movie was good"), sep, 0, 0]
    )
    np.testing.assert_array_equal(encoded.features["input_mask"][0], [1] * 6 + [0, 0])
    np.testing.assert_array_equal(encoded.features["input_type_ids"][0], [0] * 8)
    assert encoded.labels.dtype == np.int32 and encoded.labels.tolist() == [1]
    assert encoded.truncated == 0 and encoded.lengths.tolist() == [6]


def test_pair_packing_has_segment_ids_on_b():
    encoded = encode_examples([GlueExample("the movie", "was good", 0)], TOK, 9)
    cls, sep = TOK.cls_id, TOK.sep_id
    np.testing.assert_array_equal(
        encoded.features["input_word_ids"][0],
        [cls, *ids("the movie"), sep, *ids("was good"), sep, 0, 0],
    )
    np.testing.assert_array_equal(
        encoded.features["input_type_ids"][0], [0, 0, 0, 0, 1, 1, 1, 0, 0]
    )
    np.testing.assert_array_equal(encoded.features["input_mask"][0], [1] * 7 + [0, 0])


def test_truncation_is_counted_and_keeps_the_start():
    examples = [
        GlueExample("the movie was very very good", None, 1),  # 6 words + 2 = 8
        GlueExample("the film is bad", None, 0),
    ]  # 4 + 2 = 6
    encoded = encode_examples(examples, TOK, 6)
    assert encoded.truncated == 1 and encoded.lengths.tolist() == [8, 6]
    np.testing.assert_array_equal(
        encoded.features["input_word_ids"][0], [TOK.cls_id, *ids("the movie was very"), TOK.sep_id]
    )
    assert encoded.truncation_note("dev examples").startswith(
        "1 of 2 dev examples (50.0%) longer than seq_length 6, truncated (longest: 8 tokens)"
    )
    assert encoded.subset([1]).truncated == 0


def test_pair_truncation_drops_from_the_longer_side():
    assert truncate_pair([1, 2, 3, 4, 5], [6, 7], 5) == ([1, 2, 3], [6, 7])
    assert truncate_pair([1, 2], [3, 4, 5, 6], 4) == ([1, 2], [3, 4])
    assert truncate_pair([1, 2, 3], [4, 5, 6], 4) == ([1, 2], [4, 5])  # A first on a tie
    # 5 + 4 tokens into 9 - 3 = 6: A (5 > 4), A (tie), B -> 3 + 3
    encoded = encode_examples([GlueExample("the movie was very good", "a film is bad", 1)], TOK, 9)
    assert encoded.truncated == 1 and encoded.lengths.tolist() == [12]
    np.testing.assert_array_equal(
        encoded.features["input_word_ids"][0],
        [TOK.cls_id, *ids("the movie was"), TOK.sep_id, *ids("a film is"), TOK.sep_id],
    )


def test_regression_labels_are_float_and_tiny_lengths_refused():
    encoded = encode_examples([GlueExample("a", "b", 3.5)], TOK, 8, regression=True)
    assert encoded.labels.dtype == np.float32 and encoded.labels.tolist() == [3.5]
    with pytest.raises(ValueError, match="seq_length must be >= 4"):
        encode_examples([GlueExample("a", None, 1)], TOK, 3)
