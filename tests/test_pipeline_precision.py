"""`reproduce --mixed_precision bfloat16`: the setting reaches every trainer step, changes
each step's fingerprint, and is refused on a CPU without native bfloat16."""

import pytest

from mbert_lib import hardware
from mbert_lib.pipeline import core, make_context, precision
from mbert_lib.pipeline.registry import RECIPES, STEPS, get_recipe

WITH_BF16 = {
    "model": "test CPU",
    "machine": "x86_64",
    "logical_cpus": 2,
    "caches": {},
    "simd": ["fma", "avx2", "avx512f", "avx512_bf16"],
}
WITHOUT = {**WITH_BF16, "simd": ["fma", "avx2", "avx512f"]}


@pytest.fixture
def bf16_cpu(monkeypatch):
    monkeypatch.setattr(precision, "cpu_info", lambda: dict(WITH_BF16))


def experiments(node):
    """Every dict of a step's settings that names an experiment yaml."""
    if isinstance(node, dict):
        if "config_file" in node:
            yield node
        for value in node.values():
            yield from experiments(value)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_trained_experiment_gets_the_override_and_the_recipe_is_untouched(recipe):
    before = repr(get_recipe(recipe))
    changed = precision.with_mixed_precision(get_recipe(recipe), "bfloat16")
    assert repr(get_recipe(recipe)) == before
    found = list(experiments(changed))
    assert len(found) >= 5  # teacher, the distillation rows, fine-tuning, ...
    for node in found:
        assert node["overrides"]["runtime.mixed_precision"] == "bfloat16"
    assert sum(1 for _ in experiments(get_recipe(recipe))) == len(found)


def test_the_trainers_read_bfloat16_and_every_trainer_step_reruns(tmp_path, bf16_cpu):
    from mbert_lib.pipeline.steps import load_step_experiment
    from mbert_lib.pipeline.steps_distill import load_distill_step_experiment
    from mbert_lib.pipeline.steps_finetune import finetune_experiment

    plain = make_context("smoke", str(tmp_path / "a"), log=lambda *_: None)
    bf16 = make_context(
        "smoke", str(tmp_path / "b"), log=lambda *_: None, mixed_precision="bfloat16"
    )
    for ctx, expected in ((plain, "float32"), (bf16, "bfloat16")):
        s = ctx.settings
        loaded = [
            load_step_experiment(ctx, s["teacher"]),
            load_distill_step_experiment(ctx, s["pkt"]),
            finetune_experiment(
                ctx, s["finetune"], "unused", 0, next(iter(s["finetune"]["models"]))
            ),
        ]
        assert [e.runtime.mixed_precision for e in loaded] == [expected] * 3
    a, b = core.step_fingerprints(STEPS, plain), core.step_fingerprints(STEPS, bf16)
    assert a["data"] == b["data"]  # no trainer: the same step
    for name in ("teacher", "pkt", "bert_baseline", "finetune", "tflite"):
        assert a[name] != b[name], name  # trained in bfloat16, or built on what was


def test_bfloat16_is_refused_on_a_cpu_without_it(monkeypatch, tmp_path, capsys):
    assert hardware.native_bfloat16(WITH_BF16)
    assert hardware.native_bfloat16({**WITHOUT, "simd": ["asimd", "bf16"]})
    assert not hardware.native_bfloat16(WITHOUT)
    with pytest.raises(ValueError, match="natively .*avx512_bf16.*test CPU.*float32"):
        precision.check_precision("bfloat16", WITHOUT)
    with pytest.raises(ValueError, match="one of .*float16"):
        precision.check_precision("float16")
    precision.check_precision("float32", WITHOUT)

    from mbert_lib.cli import main

    monkeypatch.setattr(precision, "cpu_info", lambda: dict(WITHOUT))
    out = str(tmp_path / "run")
    assert (
        main(["reproduce", "--recipe", "smoke", "--out", out, "--mixed_precision", "bfloat16"]) == 2
    )
    assert "natively" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
