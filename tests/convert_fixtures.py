"""Test helpers for the converter tests, written independently of mbert_lib.convert.

- TF1 names and shapes come from `keras_to_tf1` (a walker over the Keras
  layers), not from the library's name map;
- TF1 checkpoints are written here with tf.compat.v1's Saver;
- Hugging Face names come from the rule transformers' own TF1 loader applies
  (`load_tf_weights_in_mobilebert`): ffn_layer -> ffn, FakeLayerNorm -> LayerNorm,
  extra_output_weights -> dense/kernel, bert -> mobilebert, name_i -> name.i,
  kernel -> weight (transposed), gamma -> weight, beta -> bias,
  output_bias -> bias, output_weights -> weight, *_embeddings -> *_embeddings.weight;
- expected outputs come from `numpy_reference`.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import tensorflow as tf

from mbert_lib import build_pretrainer, get_preset
from tests.keras_to_tf1 import tf1_arrays_from_pretrainer
from tests.numpy_reference import pretrainer_forward

VOCAB = 97
# A NoNorm / relu / shared-Q-K / 4-FFN student and a LayerNorm / gelu / pooler teacher.
STUDENT = get_preset("tiny_student").replace(
    vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=64
)
TEACHER = get_preset("tiny_teacher").replace(
    vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=64
)


def reference_shapes(config) -> dict[str, tuple]:
    """TF1 names and shapes of a built Pretrainer, read by the test-side walker."""
    return dict(_reference_shapes(config))


@functools.cache
def _reference_shapes(config) -> dict[str, tuple]:
    return {k: v.shape for k, v in tf1_arrays_from_pretrainer(build_pretrainer(config)).items()}


def random_arrays(shapes: dict[str, tuple], seed: int = 0) -> dict[str, np.ndarray]:
    """N(0, 0.05²) everywhere, γ around 1: no weight is 0 or 1, no two are alike."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes.items():
        a = rng.normal(0.0, 0.05, shape)
        out[name] = (a + 1.0 if name.endswith("gamma") else a).astype(np.float32)
    return out


def write_tf1(arrays: dict[str, np.ndarray], prefix: str) -> str:
    """A TF1-format checkpoint, names verbatim, via tf.compat.v1.train.Saver."""
    with tf.Graph().as_default():
        variables = [
            tf.compat.v1.get_variable(name, initializer=np.asarray(a)) for name, a in arrays.items()
        ]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, prefix, write_meta_graph=False)


def bookkeeping(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """global_step and Adam slots for two weights, as a TF1 training run leaves them."""
    out = {"global_step": np.array(1234, np.int64)}
    for name in list(arrays)[:2]:
        out[f"{name}/adam_m"] = np.zeros_like(arrays[name])
        out[f"{name}/adam_v"] = np.ones_like(arrays[name])
    return out


def hf_name(tf1_name: str) -> tuple[str, bool]:
    """(Hugging Face name, transpose?) by the rule of transformers' TF1 loader."""
    name = (
        tf1_name.replace("ffn_layer", "ffn")
        .replace("FakeLayerNorm", "LayerNorm")
        .replace("extra_output_weights", "dense/kernel")
        .replace("bert", "mobilebert")
    )
    parts, transpose = [], False
    for part in name.split("/"):
        m = re.fullmatch(r"([A-Za-z]+)_(\d+)", part)
        if m:
            parts += [m.group(1), m.group(2)]
        elif part in ("kernel", "gamma", "output_weights"):
            parts.append("weight")
            transpose = part == "kernel"
        elif part in ("beta", "output_bias"):
            parts.append("bias")
        else:
            parts.append(part)
    if parts[-1].endswith("_embeddings"):
        parts.append("weight")
    return ".".join(parts), transpose


def hf_tensors(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for name, a in arrays.items():
        key, transpose = hf_name(name)
        out[key] = np.ascontiguousarray(a.T if transpose else a)
    return out


def hf_config(config) -> dict:
    """config.json as transformers writes it for MobileBertForPreTraining."""
    return {
        "architectures": ["MobileBertForPreTraining"],
        "model_type": "mobilebert",
        **config.to_dict(),
        "layer_norm_eps": 1e-12,
        "true_hidden_size": config.intra_bottleneck_size,
        "pad_token_id": 0,
        "transformers_version": "4.6.0.dev0",
    }


def inputs(config, batch: int = 2, seq: int = 12, predictions: int = 3, seed: int = 1):
    """Word ids, a mask with padding on row 1, two segments, MLM positions (numpy int32)."""
    rng = np.random.default_rng(seed)
    word_ids = rng.integers(0, config.vocab_size, (batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, seq - 4 :] = 0
    type_ids = np.zeros((batch, seq), np.int32)
    type_ids[:, seq // 2 :] = 1
    positions = rng.integers(0, seq - 4, (batch, predictions)).astype(np.int32)
    return word_ids, mask, type_ids, positions


def model_outputs(model, word_ids, mask, type_ids, positions) -> dict:
    out = model(
        {
            "input_word_ids": word_ids,
            "input_mask": mask,
            "input_type_ids": type_ids,
            "masked_lm_positions": positions,
        }
    )
    return {
        k: ([x.numpy() for x in v] if isinstance(v, list) else v.numpy()) for k, v in out.items()
    }


def assert_matches_reference(model, arrays, config, atol=2e-4):
    """Encoder (every layer and attention map), MLM and NSP outputs vs numpy_reference."""
    word_ids, mask, type_ids, positions = inputs(config)
    got = model_outputs(model, word_ids, mask, type_ids, positions)
    ref = pretrainer_forward(arrays, config, word_ids, mask, type_ids, positions)
    for key in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-4, atol=atol, err_msg=key)
    for key in ("encoder_outputs", "attention_scores"):
        assert len(got[key]) == len(ref[key]) == config.num_hidden_layers
        for i, (g, r) in enumerate(zip(got[key], ref[key])):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=atol, err_msg=f"{key}[{i}]")
