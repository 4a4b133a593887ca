"""MobileBertConfig: released bert_config.json files, JSON round trip, validation, presets."""

import dataclasses
import json

import pytest

from mbert_lib.config import PRESETS, MobileBertConfig, get_preset
from mbert_lib.models import BertEncoder

# uncased_L-24_H-128_B-512_A-4_F-4_OPT/bert_config.json, as released (docs/reference.md).
RELEASED_MOBILEBERT = """{
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "relu",
  "hidden_dropout_prob": 0.0,
  "hidden_size": 512,
  "initializer_range": 0.02,
  "intermediate_size": 512,
  "max_position_embeddings": 512,
  "num_attention_heads": 4,
  "num_hidden_layers": 24,
  "type_vocab_size": 2,
  "vocab_size": 30522,
  "embedding_size": 128,
  "trigram_input": true,
  "use_bottleneck": true,
  "intra_bottleneck_size": 128,
  "key_query_shared_bottleneck": true,
  "num_feedforward_networks": 4,
  "normalization_type": "no_norm",
  "classifier_activation": false
}"""

# uncased_L-24_H-128_B-512_A-4_F-2_tiny_OPT/bert_config.json.
RELEASED_MOBILEBERT_TINY = (
    '{"attention_probs_dropout_prob":0.1,"hidden_act":"relu","hidden_dropout_prob":0.0,'
    '"hidden_size":512,"initializer_range":0.02,"intermediate_size":512,'
    '"max_position_embeddings":512,"num_attention_heads":4,"num_hidden_layers":24,'
    '"type_vocab_size":2,"vocab_size":30522,"embedding_size":128,"trigram_input":true,'
    '"use_bottleneck":true,"intra_bottleneck_size":128,"use_bottleneck_attention":true,'
    '"num_feedforward_networks":2,"normalization_type":"no_norm",'
    '"classifier_activation":false}'
)

# The IB-BERT_LARGE teacher, uncased_L-24_H-1024_B-512_A-4/bert_config.json: every
# MobileBERT key it omits takes the original BertConfig default.
RELEASED_TEACHER = (
    '{"attention_probs_dropout_prob":0.1,"hidden_act":"gelu","hidden_dropout_prob":0.1,'
    '"hidden_size":512,"initializer_range":0.02,"intermediate_size":4096,'
    '"max_position_embeddings":512,"num_attention_heads":4,"num_hidden_layers":24,'
    '"type_vocab_size":2,"vocab_size":30522,"embedding_size":128,"trigram_input":true,'
    '"use_bottleneck":true,"intra_bottleneck_size":1024}'
)

# Google's BERT uncased_L-12_H-768_A-12/bert_config.json: no MobileBERT keys at all.
RELEASED_BERT_BASE = (
    '{"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, '
    '"hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072, '
    '"max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12, '
    '"type_vocab_size": 2, "vocab_size": 30522}'
)


def _write(tmp_path, text, name="bert_config.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "text, preset",
    [
        (RELEASED_MOBILEBERT, "mobilebert"),
        (RELEASED_MOBILEBERT_TINY, "mobilebert_tiny"),
        (RELEASED_TEACHER, "ibbert_large"),
        (RELEASED_BERT_BASE, "bert_base"),
    ],
)
def test_released_config_loads_and_equals_preset(tmp_path, text, preset):
    config = MobileBertConfig.from_json_file(_write(tmp_path, text))
    assert config == get_preset(preset)


def test_written_json_uses_the_released_field_names(tmp_path):
    path = tmp_path / "out" / "bert_config.json"
    get_preset("mobilebert").to_json_file(path)
    written = json.loads(path.read_text(encoding="utf-8"))
    released = json.loads(RELEASED_MOBILEBERT)
    assert set(released) <= set(written)
    assert {k: written[k] for k in released} == released


def test_teacher_defaults_are_the_original_bert_defaults(tmp_path):
    config = MobileBertConfig.from_json_file(_write(tmp_path, RELEASED_TEACHER))
    assert config.normalization_type == "layer_norm"
    assert config.num_feedforward_networks == 1
    assert not config.key_query_shared_bottleneck and not config.use_bottleneck_attention
    assert config.classifier_activation
    assert config.intra_bottleneck_size > config.hidden_size  # h = 1024 > H = 512


def test_plain_bert_config_loads_as_bert(tmp_path):
    config = MobileBertConfig.from_json_file(_write(tmp_path, RELEASED_BERT_BASE))
    assert config.embedding_size == config.hidden_size == 768
    assert config.intra_bottleneck_size == 768 and config.attention_width == 768
    assert not config.trigram_input and not config.use_bottleneck
    assert config.normalization_type == "layer_norm" and config.num_feedforward_networks == 1
    assert config.classifier_activation
    BertEncoder(config)  # the baseline accepts it (raises on any MobileBERT feature)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_json_round_trip(tmp_path, name):
    config = get_preset(name)
    path = tmp_path / f"{name}.json"
    config.to_json_file(path)
    assert MobileBertConfig.from_json_file(path) == config
    assert MobileBertConfig.from_dict(json.loads(config.to_json_string())) == config
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.json"]  # no temp file left


def test_unknown_key_error_names_the_key_and_the_file(tmp_path):
    values = {**json.loads(RELEASED_MOBILEBERT), "num_hiden_layers": 4}
    with pytest.raises(ValueError, match="num_hiden_layers"):
        MobileBertConfig.from_dict(values)
    path = _write(tmp_path, json.dumps(values))
    with pytest.raises(ValueError, match="num_hiden_layers") as info:
        MobileBertConfig.from_json_file(path)
    assert str(path) in str(info.value)


def test_malformed_json_error_names_the_file(tmp_path):
    path = _write(tmp_path, RELEASED_MOBILEBERT[:-10], name="broken_config.json")
    with pytest.raises(ValueError, match="broken_config.json"):
        MobileBertConfig.from_json_file(path)


def test_json_that_is_not_an_object_is_rejected(tmp_path):
    path = _write(tmp_path, "[1, 2]", name="list_config.json")
    with pytest.raises(ValueError, match="list_config.json.*JSON object"):
        MobileBertConfig.from_json_file(path)


def test_invalid_value_in_file_names_file_and_field(tmp_path):
    values = {**json.loads(RELEASED_MOBILEBERT), "normalization_type": "batch_norm"}
    path = _write(tmp_path, json.dumps(values), name="bad_norm.json")
    with pytest.raises(ValueError, match="bad_norm.json.*normalization_type"):
        MobileBertConfig.from_json_file(path)


# (changes to the released MobileBERT config, the field the error must name)
INVALID = [
    (dict(vocab_size=0), "vocab_size"),
    (dict(hidden_size=-512), "hidden_size"),
    (dict(num_hidden_layers=0), "num_hidden_layers"),
    (dict(num_attention_heads=0), "num_attention_heads"),
    (dict(intermediate_size=0), "intermediate_size"),
    (dict(max_position_embeddings=0), "max_position_embeddings"),
    (dict(type_vocab_size=0), "type_vocab_size"),
    (dict(embedding_size=0), "embedding_size"),
    (dict(intra_bottleneck_size=0), "intra_bottleneck_size"),
    (dict(num_feedforward_networks=0), "num_feedforward_networks"),
    (dict(num_hidden_layers=2.0), "num_hidden_layers"),
    (dict(vocab_size="30522"), "vocab_size"),
    (dict(hidden_size=True), "hidden_size"),
    (dict(trigram_input=1), "trigram_input"),
    (dict(use_bottleneck="true"), "use_bottleneck"),
    (dict(use_bottleneck_attention=None), "use_bottleneck_attention"),
    (dict(key_query_shared_bottleneck=0), "key_query_shared_bottleneck"),
    (dict(classifier_activation="no"), "classifier_activation"),
    (dict(hidden_dropout_prob="0.1"), "hidden_dropout_prob"),
    (dict(attention_probs_dropout_prob=False), "attention_probs_dropout_prob"),
    (dict(initializer_range=None), "initializer_range"),
    (dict(hidden_act=None), "hidden_act"),
    (dict(normalization_type=1), "normalization_type"),
    (dict(hidden_dropout_prob=1.0), "hidden_dropout_prob"),
    (dict(attention_probs_dropout_prob=-0.1), "attention_probs_dropout_prob"),
    (dict(initializer_range=0.0), "initializer_range"),
    (dict(hidden_act="gelu_fast"), "hidden_act"),
    (dict(normalization_type="batch_norm"), "normalization_type"),
    (dict(classifier_pooling="max"), "classifier_pooling"),
    (dict(classifier_pooling=0), "classifier_pooling"),
    (dict(embedding_size=1024), "embedding_size"),
    (dict(intra_bottleneck_size=130), "intra_bottleneck_size"),
    (
        dict(use_bottleneck=False, intra_bottleneck_size=None, hidden_size=510, embedding_size=128),
        "hidden_size",
    ),
    (dict(use_bottleneck=False, key_query_shared_bottleneck=False), "intra_bottleneck_size"),
    (dict(use_bottleneck=False, intra_bottleneck_size=None), "key_query_shared_bottleneck"),
    (
        dict(
            use_bottleneck=False,
            intra_bottleneck_size=None,
            key_query_shared_bottleneck=False,
            use_bottleneck_attention=True,
        ),
        "use_bottleneck_attention",
    ),
    (dict(use_bottleneck_attention=True), "use_bottleneck_attention"),
]


@pytest.mark.parametrize("changes, field", INVALID, ids=[f for _, f in INVALID])
def test_invalid_config_raises_naming_the_field(changes, field):
    values = {**json.loads(RELEASED_MOBILEBERT), **changes}
    with pytest.raises(ValueError, match=field):
        MobileBertConfig.from_dict(values)
    with pytest.raises(ValueError, match=field):
        get_preset("mobilebert").replace(**changes)


def test_every_validation_rule_is_exercised():
    """Each field of the config has at least one invalid case above."""
    fields = {f.name for f in dataclasses.fields(MobileBertConfig)}
    assert fields <= {field for _, field in INVALID}


def test_config_is_frozen():
    config = get_preset("mobilebert")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.hidden_size = 256
    assert config.hidden_size == 512


def test_replace_returns_a_validated_copy():
    base = get_preset("mobilebert")
    smaller = base.replace(num_hidden_layers=2)
    assert smaller.num_hidden_layers == 2 and base.num_hidden_layers == 24
    assert smaller.replace(num_hidden_layers=24) == base


def test_derived_sizes():
    assert get_preset("mobilebert").attention_width == 128
    assert get_preset("mobilebert").attention_head_size == 32
    assert get_preset("ibbert_large").attention_head_size == 256
    assert get_preset("bert_base").attention_head_size == 64


def test_none_sizes_default_to_hidden_size():
    config = MobileBertConfig(hidden_size=64, num_attention_heads=4, intermediate_size=128)
    assert config.embedding_size == 64 and config.intra_bottleneck_size == 64


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="mobilebert_tiny"):
        get_preset("mobilebert_large")


def test_preset_shapes_match_paper_table_1():
    rows = {  # (L, H, h, E, N, F, I, norm)
        "mobilebert": (24, 512, 128, 128, 4, 4, 512, "no_norm"),
        "mobilebert_tiny": (24, 512, 128, 128, 4, 2, 512, "no_norm"),
        "ibbert_large": (24, 512, 1024, 128, 4, 1, 4096, "layer_norm"),
        "bert_base": (12, 768, 768, 768, 12, 1, 3072, "layer_norm"),
    }
    for name, row in rows.items():
        c = get_preset(name)
        assert (
            c.num_hidden_layers,
            c.hidden_size,
            c.attention_width,
            c.embedding_size,
            c.num_attention_heads,
            c.num_feedforward_networks,
            c.intermediate_size,
            c.normalization_type,
        ) == row, name
