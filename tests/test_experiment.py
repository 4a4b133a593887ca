"""Experiment yaml -> frozen dataclasses, dotted overrides, and the error messages."""

import dataclasses
from pathlib import Path

import pytest
import yaml

from mbert_lib.experiment import (
    PretrainExperiment,
    apply_overrides,
    changed_keys,
    load_experiment,
    parse_overrides,
    save_yaml,
    to_dict,
)

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def write(tmp_path, values) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def test_every_pretraining_experiment_file_loads_and_resolves_its_model():
    files = sorted(EXPERIMENTS.glob("pretrain_*.yaml"))
    assert {f.name for f in files} >= {"pretrain_tiny_teacher.yaml", "pretrain_ibbert_large.yaml"}
    for f in files:
        exp = load_experiment(f)
        assert exp.model.build_config().vocab_size == exp.data.vocab_size


def test_paper_scale_teacher_matches_the_paper_recipe():
    exp = load_experiment(EXPERIMENTS / "pretrain_ibbert_large.yaml")
    model = exp.model.build_config()
    assert (
        model.num_hidden_layers,
        model.hidden_size,
        model.intra_bottleneck_size,
        model.intermediate_size,
        model.num_attention_heads,
    ) == (24, 512, 1024, 4096, 4)
    assert (exp.trainer.train_steps, exp.trainer.batch_size, exp.data.seq_length) == (
        500_000,
        4096,
        512,
    )
    assert exp.trainer.optimizer.type == "lamb"
    assert exp.trainer.optimizer.global_clipnorm == 1.0
    assert exp.trainer.optimizer.weight_decay_rate == 0.01
    assert exp.runtime.distribution_strategy == "tpu"


def test_tiny_teacher_is_the_laptop_preset():
    exp = load_experiment(EXPERIMENTS / "pretrain_tiny_teacher.yaml")
    assert exp.model.preset == "tiny_teacher"
    assert (exp.data.seq_length, exp.trainer.batch_size) == (128, 32)


def test_sections_are_frozen_and_typed():
    exp = load_experiment(EXPERIMENTS / "pretrain_tiny_teacher.yaml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.trainer.train_steps = 3
    assert isinstance(exp.trainer.learning_rate.peak, float)
    assert isinstance(exp.trainer.optimizer.exclude_from_weight_decay, tuple)


def test_overrides_are_parsed_by_type():
    exp = PretrainExperiment()
    new = apply_overrides(
        exp,
        "trainer.train_steps=7,trainer.learning_rate.peak=2e-3,"
        "runtime.devices=[/cpu:0, /cpu:1],trainer.jit_compile=true,"
        "model.overrides.num_hidden_layers=2,description='a, b'",
    )
    assert new.trainer.train_steps == 7
    assert new.trainer.learning_rate.peak == pytest.approx(2e-3)  # yaml reads 2e-3 as a string
    assert new.runtime.devices == ("/cpu:0", "/cpu:1")
    assert new.trainer.jit_compile is True
    assert new.model.build_config().num_hidden_layers == 2
    assert new.description == "a, b"
    assert exp.trainer.train_steps == 1000  # the original is untouched
    assert changed_keys(exp, new) == sorted(
        [
            "description",
            "model.overrides.num_hidden_layers",
            "runtime.devices",
            "trainer.jit_compile",
            "trainer.learning_rate.peak",
            "trainer.train_steps",
        ]
    )


def test_parse_overrides_splits_only_top_level_commas():
    assert parse_overrides("a.b=1, c=[x, y],d={e: 1},f='g,h'") == [
        ("a.b", 1),
        ("c", ["x", "y"]),
        ("d", {"e": 1}),
        ("f", "g,h"),
    ]


@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.train_stepz=1", "unknown key 'trainer.train_stepz'"),
        ("trainr.train_steps=1", "unknown key 'trainr.train_steps'"),
        ("model.overrides.hidden_sise=1", "unknown key 'model.overrides.hidden_sise'"),
        ("trainer.train_steps=1.5", "trainer.train_steps must be an integer, got 1.5"),
        ("trainer.jit_compile=sometimes", "trainer.jit_compile must be true or false"),
        ("trainer.learning_rate.peak=fast", "trainer.learning_rate.peak must be a number"),
        ("runtime.distribution_strategy=gpu", "runtime.distribution_strategy must be one of"),
        ("runtime.mixed_precision=float16", "runtime.mixed_precision must be one of"),
        ("model.overrides.num_hidden_layers=two", "num_hidden_layers must be an integer"),
        ("trainer.train_steps.x=1", "'trainer.train_steps' is a value, not a section"),
        ("trainer.train_steps", "expected key=value"),
        ("data.vocab_size=100", "data.vocab_size (100) differs from the model's vocab_size (8192)"),
        (
            "data.seq_length=1024,data.max_predictions_per_seq=20",
            "data.seq_length must be <= the model's max_position_embeddings (512)",
        ),
        ("trainer.train_steps=0", "trainer.train_steps must be > 0"),
    ],
)
def test_bad_overrides_name_the_key(override, message):
    with pytest.raises(ValueError) as info:
        apply_overrides(PretrainExperiment(), override)
    assert message in str(info.value)


def test_bad_files_name_the_file_and_key(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        load_experiment(tmp_path / "nope.yaml")
    path = write(tmp_path, {"trainer": {"optimizer": {"typ": "lamb"}}})
    with pytest.raises(ValueError, match=r"exp\.yaml: unknown key 'trainer\.optimizer\.typ'"):
        load_experiment(path)
    path = write(tmp_path, {"trainer": {"batch_size": "32"}})
    with pytest.raises(ValueError, match="trainer.batch_size must be an integer, got '32'"):
        load_experiment(path)
    path = write(tmp_path, {"model": {"preset": "nope"}})
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        load_experiment(path)
    path = write(tmp_path, {"model": {"bert_config_file": "x.json"}})
    with pytest.raises(ValueError, match="exactly one of model.preset and model.bert_config_file"):
        load_experiment(path)
    path = write(tmp_path, ["not", "a", "mapping"])
    with pytest.raises(ValueError, match="must be a mapping"):
        load_experiment(path)


def test_model_from_a_bert_config_file(tmp_path):
    from mbert_lib import get_preset

    get_preset("tiny_student").replace(vocab_size=100).to_json_file(tmp_path / "bert_config.json")
    path = write(
        tmp_path,
        {
            "model": {
                "preset": None,
                "bert_config_file": str(tmp_path / "bert_config.json"),
                "overrides": {"num_hidden_layers": 3},
            },
            "data": {"vocab_size": 100},
        },
    )
    model = load_experiment(path).model.build_config()
    assert (model.vocab_size, model.num_hidden_layers, model.normalization_type) == (
        100,
        3,
        "no_norm",
    )


def test_save_and_load_round_trip(tmp_path):
    exp = apply_overrides(
        load_experiment(EXPERIMENTS / "pretrain_ibbert_large.yaml"),
        "trainer.train_steps=12,trainer.learning_rate.warmup_steps=2,"
        "model.overrides.num_hidden_layers=2",
    )
    save_yaml(exp, tmp_path / "saved.yaml")
    again = load_experiment(tmp_path / "saved.yaml")
    assert again == exp
    assert to_dict(again) == to_dict(exp)


def test_optional_fields_are_checked_and_converted_like_the_others():
    """Fields annotated `X | None` (or Optional[X]) take None, and any other value is
    checked and converted as X: a yaml "1e-3" string becomes a float, a list of devices a
    tuple, and a number where a string belongs is refused, naming the key."""
    from mbert_lib.config_tree import from_dict

    experiment = from_dict(
        PretrainExperiment,
        {
            "trainer": {"optimizer": {"global_clipnorm": "1e-3"}, "eval_steps": None},
            "runtime": {"devices": ["/cpu:0"]},
        },
    )
    assert experiment.trainer.optimizer.global_clipnorm == 0.001
    assert experiment.trainer.eval_steps is None
    assert experiment.runtime.devices == ("/cpu:0",)
    with pytest.raises(ValueError, match="model.preset"):
        from_dict(PretrainExperiment, {"model": {"preset": 5}})
    with pytest.raises(ValueError, match="trainer.eval_steps"):
        from_dict(PretrainExperiment, {"trainer": {"eval_steps": "all"}})
