"""TF-Hub-style SavedModels: encoder (+ mlm) and preprocessing, reloaded with
tf.saved_model.load and tensorflow_hub.KerasLayer and compared with the Keras model;
tokenization compared with the `tokenizers` library's BertWordPieceTokenizer."""

import os
import shutil
import string

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras
from tokenizers import BertWordPieceTokenizer

from mbert_lib.cli import main
from mbert_lib.convert import pretrainer_from_tf1_arrays, save_pretrainer
from mbert_lib.data.tokenizer import SPECIAL_TOKENS
from mbert_lib.export.preprocessing import read_model_vocab
from tests.convert_fixtures import STUDENT, inputs, model_outputs, random_arrays, reference_shapes

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

SEQ = 16
WORDS = (
    "the cat sat on mat hello world mobile ##bert run ##ning phone cafe naive "
    "resume un ##aff ##able is small"
).split()
SENTENCES = [
    "Hello, World! The cat sat on the mat.",
    "MobileBERT runs on phones.",
    "Café naïve résumé",
    "Unaffable xyzzy!",
    "the cat " * 20,
]


def _vocab(size):
    tokens = (
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        + list(".,!?'-")
        + WORDS
        + list(string.ascii_lowercase)
        + ["##" + c for c in string.ascii_lowercase]
    )
    assert len(tokens) == len(set(tokens)) <= size
    return tokens + [f"[unused{i}]" for i in range(size - len(tokens))]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    model = pretrainer_from_tf1_arrays(STUDENT, random_arrays(reference_shapes(STUDENT), seed=4))
    save_pretrainer(model, root / "ckpt")
    vocab_file = root / "source" / "vocab.txt"
    vocab_file.parent.mkdir()
    vocab_file.write_text("\n".join(_vocab(STUDENT.vocab_size)) + "\n")
    assert (
        main(
            [
                "export",
                "savedmodel",
                "--checkpoint",
                str(root / "ckpt"),
                "--vocab_file",
                str(vocab_file),
                "--do_lower_case",
                "--export_path",
                str(root / "encoder"),
                "--seq_length",
                str(SEQ),
            ]
        )
        == 0
    )
    # The SavedModels must carry the vocabulary themselves.
    reference_vocab = root / "vocab.txt"
    shutil.move(vocab_file, reference_vocab)
    return {
        "model": model,
        "encoder": str(root / "encoder"),
        "preprocess": str(root / "encoder_preprocess"),
        "vocab": str(reference_vocab),
    }


def _reference_ids(vocab, sentences, pair=None, length=SEQ):
    tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
    tokenizer.enable_truncation(max_length=length)
    tokenizer.enable_padding(length=length, pad_id=0, pad_token="[PAD]")
    encodings = (
        tokenizer.encode_batch(list(zip(sentences, pair)))
        if pair
        else tokenizer.encode_batch(sentences)
    )
    return {
        "input_word_ids": np.array([e.ids for e in encodings], np.int32),
        "input_mask": np.array([e.attention_mask for e in encodings], np.int32),
        "input_type_ids": np.array([e.type_ids for e in encodings], np.int32),
    }


def _feed():
    word_ids, mask, type_ids, positions = inputs(STUDENT)
    return (
        {
            "input_word_ids": tf.constant(word_ids),
            "input_mask": tf.constant(mask),
            "input_type_ids": tf.constant(type_ids),
        },
        positions,
    )


def test_encoder_savedmodel_matches_keras(exported):
    loaded = tf.saved_model.load(exported["encoder"])
    feed, positions = _feed()
    want = model_outputs(exported["model"], *[v.numpy() for v in feed.values()], positions)
    got = loaded(feed)
    np.testing.assert_allclose(got["sequence_output"], want["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
    np.testing.assert_array_equal(got["default"], got["pooled_output"])
    assert len(got["encoder_outputs"]) == STUDENT.num_hidden_layers
    for g, w in zip(got["encoder_outputs"], want["encoder_outputs"]):
        np.testing.assert_allclose(g, w, atol=1e-5)

    mlm = loaded.mlm({**feed, "masked_lm_positions": tf.constant(positions)})
    np.testing.assert_allclose(mlm["mlm_logits"], want["mlm_logits"], atol=1e-5)
    np.testing.assert_allclose(mlm["nsp_logits"], want["nsp_logits"], atol=1e-5)

    serving = loaded.signatures["serving_default"](**feed)
    assert serving["encoder_outputs"].shape[0] == STUDENT.num_hidden_layers
    np.testing.assert_allclose(serving["default"], want["pooled_output"], atol=1e-5)
    assert "mlm_logits" in loaded.signatures["mlm"](
        **feed, masked_lm_positions=tf.constant(positions)
    )

    assert bool(loaded.do_lower_case.numpy()) is True
    with open(loaded.vocab_file.asset_path.numpy().decode()) as f, open(exported["vocab"]) as g:
        assert f.read() == g.read()
    assert len(loaded.trainable_variables) == len(exported["model"].encoder.trainable_variables)


def test_encoder_savedmodel_converts_to_tflite_with_builtin_ops_only(exported):
    """TFLiteConverter.from_saved_model on the exported encoder, builtins only (no TF Select):
    its serving_default runs in the LiteRT interpreter at any shape and equals Keras."""
    from ai_edge_litert.interpreter import Interpreter

    converter = tf.lite.TFLiteConverter.from_saved_model(
        exported["encoder"], signature_keys=["serving_default"]
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    runner = Interpreter(model_content=converter.convert()).get_signature_runner()
    feed, positions = _feed()
    want = model_outputs(exported["model"], *[v.numpy() for v in feed.values()], positions)
    got = runner(**{k: v.numpy() for k, v in feed.items()})
    np.testing.assert_allclose(got["sequence_output"], want["sequence_output"], atol=1e-4)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-4)


def test_encoder_through_hub_keras_layer(exported):
    feed, positions = _feed()
    want = model_outputs(exported["model"], *[v.numpy() for v in feed.values()], positions)
    layer = hub.KerasLayer(exported["encoder"], trainable=True)
    got = layer(feed)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
    assert len(layer.trainable_weights) == len(exported["model"].encoder.trainable_weights)
    # `training` reaches the model: attention dropout (0.1) changes the output.
    dropped = layer(feed, training=True)["sequence_output"]
    assert not np.allclose(dropped, got["sequence_output"])
    # Fine-tunable: every trainable weight gets a gradient through the loaded functions.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(feed, training=True)["pooled_output"] ** 2)
    grads = tape.gradient(loss, layer.trainable_weights)
    assert sum(g is not None for g in grads) > 0.9 * len(grads)


def test_preprocessing_matches_reference_tokenizer(exported):
    preprocess = tf.saved_model.load(exported["preprocess"])
    got = preprocess(tf.constant(SENTENCES))
    want = _reference_ids(exported["vocab"], SENTENCES)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)

    a, b = ["the cat sat.", "Hello!"], ["on the mat", "MobileBERT runs"]
    packed = preprocess.bert_pack_inputs(
        [preprocess.tokenize(tf.constant(a)), preprocess.tokenize(tf.constant(b))], tf.constant(24)
    )
    want = _reference_ids(exported["vocab"], a, pair=b, length=24)
    for key in want:
        np.testing.assert_array_equal(packed[key], want[key], err_msg=key)


def test_raw_strings_through_both_savedmodels_in_keras(exported):
    """strings -> hub preprocessing layer -> hub encoder layer == Keras on reference ids."""
    text = tf_keras.layers.Input(shape=(), dtype=tf.string)
    encoder_inputs = hub.KerasLayer(exported["preprocess"])(text)
    pooled = hub.KerasLayer(exported["encoder"])(encoder_inputs)["pooled_output"]
    got = tf_keras.Model(text, pooled)(tf.constant(SENTENCES))
    ids = _reference_ids(exported["vocab"], SENTENCES)
    want = exported["model"].encoder(ids)["pooled_output"]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_vocab_of_the_wrong_size_is_refused(exported, tmp_path, capsys):
    small = tmp_path / "vocab.txt"
    small.write_text("\n".join(_vocab(STUDENT.vocab_size)[:-1]) + "\n")
    ckpt = os.path.join(os.path.dirname(exported["encoder"]), "ckpt")
    assert (
        main(
            [
                "export",
                "savedmodel",
                "--checkpoint",
                ckpt,
                "--vocab_file",
                str(small),
                "--export_path",
                str(tmp_path / "enc"),
            ]
        )
        == 2
    )
    assert "vocab_size" in capsys.readouterr().err
    assert not (tmp_path / "enc").exists()


def test_a_vocabulary_of_another_size_is_refused_naming_both_sizes(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    tokens = [*SPECIAL_TOKENS, "good", "bad"]
    vocab_file.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    assert read_model_vocab(vocab_file, len(tokens)) == tokens
    with pytest.raises(ValueError, match=f"has {len(tokens)} tokens, the model's vocab_size is 99"):
        read_model_vocab(vocab_file, 99)
