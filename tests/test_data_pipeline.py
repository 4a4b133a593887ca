"""TFRecord round trip, the examples cache (reuse vs rebuild), the tf.data contract."""

import json

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.config import get_preset
from mbert_lib.data import tfrecord
from mbert_lib.data.errors import DataError
from mbert_lib.data.examples import FEATURES, ExampleConfig, create_examples
from mbert_lib.data.pipeline import check_model_compatibility, make_pretraining_dataset
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer

T, P = 32, 5
TOKENIZER = WordPieceTokenizer(list(SPECIAL_TOKENS) + [f"w{i}" for i in range(200)])


def _examples(seed, dupe_factor=3):
    rng = np.random.default_rng(seed)
    documents = [
        [rng.integers(5, 205, rng.integers(3, 12)).tolist() for _ in range(6)] for _ in range(12)
    ]
    return create_examples(
        documents, TOKENIZER, ExampleConfig(T, P, dupe_factor=dupe_factor, seed=seed)
    )


def _build(directory, key, calls):
    def make():
        calls.append(1)
        splits = {"train": _examples(key["seed"]), "eval": _examples(key["seed"] + 1, 1)}
        return splits, {
            "seq_length": T,
            "max_predictions_per_seq": P,
            "vocab_size": TOKENIZER.vocab_size,
        }

    return tfrecord.build_examples_cache(directory, key, make)


def test_tfrecord_round_trip_equals_in_memory(tmp_path):
    examples = _examples(0)
    n = tfrecord.write_tfrecord(tmp_path / "x.tfrecord", examples)
    back = tfrecord.read_tfrecord(tmp_path / "x.tfrecord", T, P)
    assert n == len(examples["next_sentence_labels"])
    for name, dtype in FEATURES.items():
        assert back[name].dtype == dtype
        np.testing.assert_array_equal(back[name], examples[name])
    assert [p.name for p in tmp_path.iterdir()] == ["x.tfrecord"], "no temporary file left"


def test_cache_reused_when_key_matches_rebuilt_when_it_differs(tmp_path):
    calls = []
    first, reused = _build(tmp_path, {"seed": 1}, calls)
    assert not reused and len(calls) == 1
    stamp = (tmp_path / "train.tfrecord").stat().st_mtime_ns
    second, reused = _build(tmp_path, {"seed": 1}, calls)
    assert reused and len(calls) == 1 and second == first
    assert (tmp_path / "train.tfrecord").stat().st_mtime_ns == stamp
    third, reused = _build(tmp_path, {"seed": 2}, calls)
    assert not reused and len(calls) == 2 and third["key"]["seed"] == 2
    np.testing.assert_array_equal(
        tfrecord.read_tfrecord(tmp_path / "train.tfrecord", T, P)["input_word_ids"],
        _examples(2)["input_word_ids"],
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["counts"]["train"] == len(_examples(2)["next_sentence_labels"])


def test_cache_rebuilt_when_a_file_is_missing(tmp_path):
    calls = []
    _build(tmp_path, {"seed": 1}, calls)
    (tmp_path / "eval.tfrecord").unlink()
    _, reused = _build(tmp_path, {"seed": 1}, calls)
    assert not reused and (tmp_path / "eval.tfrecord").is_file()


def test_dataset_contract_and_eval_order(tmp_path):
    _build(tmp_path, {"seed": 1}, [])
    batch = next(iter(make_pretraining_dataset(tmp_path, 8)))
    expected = {
        "input_word_ids": (tf.int32, [8, T]),
        "input_mask": (tf.int32, [8, T]),
        "input_type_ids": (tf.int32, [8, T]),
        "masked_lm_positions": (tf.int32, [8, P]),
        "masked_lm_ids": (tf.int32, [8, P]),
        "masked_lm_weights": (tf.float32, [8, P]),
        "next_sentence_labels": (tf.int32, [8]),
    }
    assert {k: (v.dtype, v.shape.as_list()) for k, v in batch.items()} == expected
    evaluation = list(make_pretraining_dataset(tmp_path, 7, split="eval").as_numpy_iterator())
    in_memory = _examples(2, 1)
    np.testing.assert_array_equal(
        np.concatenate([b["input_word_ids"] for b in evaluation]), in_memory["input_word_ids"]
    )
    assert len(evaluation[-1]["input_word_ids"]) <= 7, "eval keeps the last partial batch"


def test_training_order_is_deterministic_for_a_seed_and_repeats(tmp_path):
    _build(tmp_path, {"seed": 1}, [])
    count = tfrecord.read_manifest(tmp_path)["counts"]["train"]

    def first_ids(seed, batches):
        dataset = make_pretraining_dataset(tmp_path, 4, seed=seed, shuffle_buffer=1000)
        return np.concatenate([b["input_word_ids"] for b in dataset.take(batches)])

    batches = count // 4 + 3  # past the end: the training split repeats
    same = first_ids(5, batches)
    np.testing.assert_array_equal(same, first_ids(5, batches))
    assert not np.array_equal(same, first_ids(6, batches))


def test_missing_manifest_and_unknown_split_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json.*prepare"):
        make_pretraining_dataset(tmp_path, 8)
    _build(tmp_path, {"seed": 1}, [])
    with pytest.raises(DataError, match="no split 'dev'"):
        make_pretraining_dataset(tmp_path, 8, split="dev")


def test_model_compatibility_check(tmp_path):
    _build(tmp_path, {"seed": 1}, [])
    config = get_preset("tiny_student").replace(vocab_size=TOKENIZER.vocab_size)
    check_model_compatibility(config, tokenizer=TOKENIZER, examples_dir=tmp_path)
    with pytest.raises(DataError, match="vocab_size mismatch.*205 tokens.*vocab_size=8192"):
        check_model_compatibility(get_preset("tiny_student"), tokenizer=TOKENIZER)
    with pytest.raises(DataError, match="seq_length 32.*max_position_embeddings=16"):
        check_model_compatibility(config.replace(max_position_embeddings=16), examples_dir=tmp_path)
