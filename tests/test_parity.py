"""Numerical parity with independent computations.

1. The numpy forward of tests/numpy_reference.py (keyed by the released TF1
   names, written from the paper and the TF1 variable layout) against
   MobileBertEncoder / Pretrainer, for the four block shapes the library runs.
2. A second Keras code path: MobileBertEncoder with a plain BERT config
   against BertEncoder, built from Keras' own MultiHeadAttention.
"""

import numpy as np
import pytest

from mbert_lib.config import MobileBertConfig
from mbert_lib.models import BertEncoder, build_encoder, build_pretrainer, count_params
from tests.helpers import random_inputs, randomize_affine_weights, randomize_kernels, small_config
from tests.keras_to_tf1 import tf1_arrays_from_pretrainer
from tests.numpy_reference import pretrainer_forward

SMALL_BERT = MobileBertConfig(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=96,
    max_position_embeddings=32,
    type_vocab_size=2,
)

CONFIGS = {
    # no_norm, relu, shared Q/K bottleneck, F = 4
    "tiny_student": small_config("tiny_student"),
    # layer_norm, gelu, h = 256 > H = 128, Q, K, V from x: the shape Hugging Face cannot run
    "tiny_teacher": small_config("tiny_teacher"),
    # attention on the input bottleneck (use_bottleneck_attention), F = 2
    "mobilebert_tiny_shaped": small_config(
        "mobilebert_tiny",
        hidden_size=64,
        embedding_size=16,
        intra_bottleneck_size=32,
        intermediate_size=64,
    ),
    "bert": SMALL_BERT,
}


def _assert_close(actual, expected, what):
    expected = np.asarray(expected)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(
        np.asarray(actual), expected, rtol=1e-4, atol=2e-5 * scale, err_msg=what
    )


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pretrainer_matches_numpy_reference(name):
    config = CONFIGS[name]
    model = build_pretrainer(config)
    randomize_affine_weights(model)
    randomize_kernels(model)
    inputs = random_inputs(config, batch=2, seq=9, pads=(0, 3))
    inputs["masked_lm_positions"] = np.array([[1, 4, 8], [0, 2, 5]], np.int32)  # [B, P]
    got = model(inputs)
    ref = pretrainer_forward(
        tf1_arrays_from_pretrainer(model),
        config,
        inputs["input_word_ids"],
        inputs["input_mask"],
        inputs["input_type_ids"],
        inputs["masked_lm_positions"],
    )
    for key in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits"):
        _assert_close(got[key].numpy(), ref[key], key)
    assert len(got["encoder_outputs"]) == len(ref["encoder_outputs"]) == 2
    for i, (a, b) in enumerate(zip(got["encoder_outputs"], ref["encoder_outputs"])):
        _assert_close(a.numpy(), b, f"encoder_outputs[{i}]")
    for i, (a, b) in enumerate(zip(got["attention_scores"], ref["attention_scores"])):
        _assert_close(a.numpy(), b, f"attention_scores[{i}]")
    assert got["mlm_logits"].shape == (2, 3, config.vocab_size)
    assert max(p.max() for p in ref["attention_scores"]) > 0.5  # far from uniform


def test_reference_comparison_has_teeth():
    """Swapping one norm's γ and β (the tf-models copy bug) breaks parity."""
    config = CONFIGS["tiny_student"]
    model = build_pretrainer(config)
    randomize_affine_weights(model)
    inputs = random_inputs(config)
    weights = tf1_arrays_from_pretrainer(model)
    scope = "bert/embeddings/FakeLayerNorm"
    weights[f"{scope}/gamma"], weights[f"{scope}/beta"] = (
        weights[f"{scope}/beta"],
        weights[f"{scope}/gamma"],
    )
    ref = pretrainer_forward(
        weights, config, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]
    )
    got = model(inputs)["sequence_output"].numpy()
    assert np.abs(got - ref["sequence_output"]).max() > 1e-2


def _copy_by_role(mobile, bert):
    """Copies MobileBertEncoder weights into BertEncoder, matching sublayers by role."""
    emb = mobile.embedding
    pairs = [
        (emb.word_embeddings, bert.word_embeddings),
        (emb.position_embeddings, bert.position_embeddings),
        (emb.token_type_embeddings, bert.token_type_embeddings),
        (emb.norm, bert.embedding_norm),
        (mobile.pooler, bert.pooler),
    ]
    for ours, theirs in zip(mobile.blocks, bert.blocks):
        att, keras_att = ours.attention, theirs.attention
        ffn = ours.ffns[0]
        pairs += [
            (att.query, keras_att._query_dense),
            (att.key, keras_att._key_dense),
            (att.value, keras_att._value_dense),
            (att.attention_output, keras_att._output_dense),
            (ours.attention_norm, theirs.attention_norm),
            (ffn.intermediate, theirs.intermediate),
            (ffn.output_dense, theirs.output_dense),
            (ffn.norm, theirs.output_norm),
        ]
    for src, dst in pairs:
        for a, b in zip(src.weights, dst.weights, strict=True):
            assert a.name.split("/")[-1] == b.name.split("/")[-1], (a.name, b.name)
            b.assign(a)


def test_mobilebert_encoder_with_bert_config_equals_keras_bert_encoder():
    mobile = build_encoder(SMALL_BERT)
    randomize_affine_weights(mobile)
    randomize_kernels(mobile)
    bert = BertEncoder(SMALL_BERT)
    inputs = random_inputs(SMALL_BERT, pads=(0, 4))
    bert(inputs)
    assert count_params(bert) == count_params(mobile)
    before = bert(inputs)["sequence_output"].numpy()
    _copy_by_role(mobile, bert)
    got, want = mobile(inputs), bert(inputs)
    assert np.abs(before - want["sequence_output"].numpy()).max() > 1e-2  # the copy mattered
    for key in ("embedding_output", "sequence_output", "pooled_output"):
        _assert_close(got[key].numpy(), want[key].numpy(), key)
    for key in ("encoder_outputs", "attention_scores"):
        for i, (a, b) in enumerate(zip(got[key], want[key], strict=True)):
            _assert_close(a.numpy(), b.numpy(), f"{key}[{i}]")


def test_bert_encoder_rejects_mobilebert_configs():
    with pytest.raises(ValueError, match="trigram_input"):
        BertEncoder(small_config("mobilebert"))
    with pytest.raises(ValueError, match="normalization_type"):
        BertEncoder(SMALL_BERT.replace(normalization_type="no_norm"))
