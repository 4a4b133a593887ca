"""The name map: against the released names (docs/reference.md), the built Keras model,
the test-side Keras -> TF1 walker, and transformers' own TF1 -> PyTorch naming rule."""

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib import build_pretrainer, get_preset
from mbert_lib.convert import name_map, name_table, tf1_arrays_from_pretrainer
from mbert_lib.convert.names import keras_to_tf1, tf1_to_keras
from tests.convert_fixtures import STUDENT, TEACHER, hf_name
from tests.keras_to_tf1 import tf1_arrays_from_pretrainer as walker_arrays

MOBILEBERT = get_preset("mobilebert")
L0 = "bert/encoder/layer_0"

# Released uncased_L-24_H-128_B-512_A-4_F-4_OPT names and shapes (docs/reference.md).
RELEASED = {
    "bert/embeddings/word_embeddings": (30522, 128),
    "bert/embeddings/embedding_transformation/kernel": (384, 512),
    "bert/embeddings/position_embeddings": (512, 512),
    "bert/embeddings/token_type_embeddings": (2, 512),
    "bert/embeddings/FakeLayerNorm/gamma": (512,),
    f"{L0}/bottleneck/input/dense/kernel": (512, 128),
    f"{L0}/bottleneck/input/FakeLayerNorm/beta": (128,),
    f"{L0}/bottleneck/attention/dense/kernel": (512, 128),
    f"{L0}/attention/self/query/kernel": (128, 128),
    f"{L0}/attention/self/key/kernel": (128, 128),
    f"{L0}/attention/self/value/kernel": (512, 128),
    f"{L0}/attention/output/dense/kernel": (128, 128),
    f"{L0}/attention/output/FakeLayerNorm/gamma": (128,),
    f"{L0}/ffn_layer_0/intermediate/dense/kernel": (128, 512),
    f"{L0}/ffn_layer_2/output/dense/kernel": (512, 128),
    f"{L0}/ffn_layer_2/output/FakeLayerNorm/beta": (128,),
    f"{L0}/intermediate/dense/kernel": (128, 512),
    f"{L0}/output/dense/kernel": (512, 128),
    f"{L0}/output/FakeLayerNorm/gamma": (128,),
    f"{L0}/output/bottleneck/dense/kernel": (128, 512),
    f"{L0}/output/bottleneck/FakeLayerNorm/beta": (512,),
    "bert/encoder/layer_23/output/bottleneck/dense/bias": (512,),
    "cls/predictions/transform/dense/kernel": (512, 512),
    "cls/predictions/transform/LayerNorm/gamma": (512,),
    "cls/predictions/output_bias": (30522,),
    "cls/predictions/extra_output_weights": (30522, 384),
    "cls/seq_relationship/output_weights": (2, 512),
    "cls/seq_relationship/output_bias": (2,),
}


def test_released_names_and_shapes():
    entries = {e.tf1: e.tf1_shape for e in name_map(MOBILEBERT)}
    for name, shape in RELEASED.items():
        assert entries.get(name) == shape, name
    assert f"{L0}/ffn_layer_3/intermediate/dense/kernel" not in entries  # F-1 extra FFNs only
    assert "bert/pooler/dense/kernel" not in entries  # classifier_activation false
    assert not any(
        "LayerNorm" in k and "FakeLayerNorm" not in k and not k.startswith("cls/") for k in entries
    )
    # 7 embedding weights + 24 × 46 per block + 8 head weights.
    assert len(entries) == 7 + 24 * 46 + 8


def test_encoder_parameter_count_matches_tf_models():
    """docs/reference.md: tf-models' MobileBERT encoder has 24,581,888 weights."""
    count = sum(int(np.prod(e.tf1_shape)) for e in name_map(MOBILEBERT, include_heads=False))
    assert count == 24_581_888


def _small_configs():
    bert = get_preset("bert_base").replace(
        vocab_size=50,
        hidden_size=32,
        embedding_size=32,
        intra_bottleneck_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
    )
    tiny = get_preset("mobilebert_tiny").replace(
        vocab_size=50,
        num_hidden_layers=2,
        hidden_size=64,
        embedding_size=16,
        intra_bottleneck_size=32,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    return {"student": STUDENT, "teacher": TEACHER, "mobilebert_tiny": tiny, "bert": bert}


@pytest.mark.parametrize("name", ["student", "teacher", "mobilebert_tiny", "bert"])
def test_map_is_exactly_the_models_checkpoint(tmp_path, name):
    """Keras paths and shapes are exactly the keys of a written Pretrainer checkpoint."""
    config = _small_configs()[name]
    model = build_pretrainer(config)
    prefix = tf.train.Checkpoint(
        encoder=model.encoder, masked_lm=model.masked_lm, next_sentence=model.next_sentence
    ).write(str(tmp_path / "ck"))
    suffix = "/.ATTRIBUTES/VARIABLE_VALUE"
    keys = {
        k[: -len(suffix)]: tuple(s)
        for k, s in tf.train.list_variables(prefix)
        if k.endswith(suffix)
    }
    assert keys == {e.keras: e.keras_shape for e in name_map(config)}

    # The library's Keras -> TF1 reading agrees with the independent walker.
    ours, walker = tf1_arrays_from_pretrainer(model), walker_arrays(model)
    assert set(ours) == set(walker)
    for k in walker:
        np.testing.assert_array_equal(ours[k], walker[k], err_msg=k)


@pytest.mark.parametrize("config", [MOBILEBERT, TEACHER], ids=["mobilebert", "teacher"])
def test_hugging_face_names_follow_transformers_rule(config):
    for e in name_map(config):
        expected, transposed = hf_name(e.tf1)
        assert e.hf == expected, e.tf1
        assert e.hf_shape == (e.tf1_shape[::-1] if transposed else e.tf1_shape), e.tf1


def test_hugging_face_spot_checks():
    hf = {e.hf: e.hf_shape for e in name_map(MOBILEBERT)}
    layer = "mobilebert.encoder.layer.0"
    assert hf["mobilebert.embeddings.embedding_transformation.weight"] == (512, 384)
    assert hf[f"{layer}.bottleneck.attention.dense.weight"] == (128, 512)
    assert hf[f"{layer}.attention.self.value.weight"] == (128, 512)
    assert hf[f"{layer}.ffn.2.output.LayerNorm.bias"] == (128,)
    assert hf[f"{layer}.output.bottleneck.LayerNorm.weight"] == (512,)
    assert hf["cls.predictions.dense.weight"] == (384, 30522)
    assert hf["cls.predictions.bias"] == (30522,)
    assert hf["cls.seq_relationship.weight"] == (2, 512)


def test_per_head_reshape_gives_head_n_columns_n_d_to_n_d_plus_d():
    entries = {e.tf1: e for e in name_map(STUDENT)}
    n_heads, d = STUDENT.num_attention_heads, STUDENT.attention_head_size
    query = entries[f"{L0}/attention/self/query/kernel"]
    kernel = np.arange(np.prod(query.tf1_shape), dtype=np.float32).reshape(query.tf1_shape)
    per_head = tf1_to_keras(query, kernel)  # [D, N, d]
    for n in range(n_heads):
        np.testing.assert_array_equal(per_head[:, n, :], kernel[:, n * d : (n + 1) * d])
    np.testing.assert_array_equal(keras_to_tf1(query, per_head), kernel)
    output = entries[f"{L0}/attention/output/dense/kernel"]
    kernel = np.arange(np.prod(output.tf1_shape), dtype=np.float32).reshape(output.tf1_shape)
    per_head = tf1_to_keras(output, kernel)  # [N, d, O]
    for n in range(n_heads):
        np.testing.assert_array_equal(per_head[n], kernel[n * d : (n + 1) * d, :])


def test_name_table():
    table = name_table(MOBILEBERT)
    assert len(table) == len(name_map(MOBILEBERT))
    assert {"TF1 name", "Keras path", "Hugging Face name", "TF1→Keras"} <= set(table.columns)
    assert (
        table["TF1→Keras"] == "reshape"
    ).sum() == 24 * 7  # q, k, v kernels + biases, output kernel
