"""The baseline and fine-tuning steps of the reproduce pipeline, without training anything."""

import pytest

from mbert_lib import get_preset
from mbert_lib.models import BertEncoder, build_encoder, count_params, dummy_inputs
from mbert_lib.pipeline import RECIPES, STEPS, steps_finetune
from mbert_lib.pipeline.core import Context, PipelineError, Step, run_steps


def _ctx(tmp_path, settings, data_dir=None):
    return Context(out_dir=tmp_path, settings=settings, data_dir=data_dir, log=lambda _: None)


def _recording_steps(calls, extra=()):
    def make(name):
        def run(ctx, settings):
            calls.append(name)
            return {"name": name}

        return run

    models = Step(
        "compare",
        "uses the steps its settings name",
        make("compare"),
        uses=lambda settings: settings["models"],
    )
    return [Step("a", "a", make("a")), *extra, Step("b", "b", make("b")), models]


def test_steps_named_in_settings_run_first_and_enter_the_fingerprint(tmp_path):
    calls, settings = [], {"compare": {"models": ["a", "late"]}}
    run_steps(_recording_steps(calls), _ctx(tmp_path, settings), only=["compare"])
    assert calls == ["a", "compare"]  # b is not named, "late" not known
    calls.clear()
    run_steps(_recording_steps(calls), _ctx(tmp_path, settings), only=["compare"])
    assert calls == []  # done, skipped
    late = Step("late", "joins the pipeline later", lambda ctx, s: calls.append("late") or {})
    run_steps(_recording_steps(calls, [late]), _ctx(tmp_path, settings), only=["compare"])
    assert calls == ["late", "compare"], "a step that appears re-runs the step naming it"


def test_a_missing_model_is_skipped_with_a_reason_or_raises(tmp_path):
    settings = {
        "config_file": "experiments/finetune_sst2_laptop.yaml",
        "task": "auto",
        "overrides": {},
        "models": {"pkt": {"seeds": 3}},
        "missing": "skip",
    }
    result = steps_finetune.run_finetune(_ctx(tmp_path, {}), settings)
    assert result["task"] == "builtin_shuffled"
    assert result["models"]["pkt"]["status"] == "missing"
    assert "no finished step 'pkt'" in result["models"]["pkt"]["reason"]
    with pytest.raises(PipelineError, match="cannot fine-tune 'pkt'"):
        steps_finetune.run_finetune(_ctx(tmp_path, {}), {**settings, "missing": "raise"})
    with pytest.raises(ValueError, match="finetune.missing must be 'skip' or 'raise'"):
        steps_finetune.run_finetune(_ctx(tmp_path, {}), {**settings, "missing": "ignore"})


def test_the_task_is_sst2_with_data_and_the_offline_task_without(tmp_path):
    settings = {"task": "auto"}
    assert steps_finetune.task_name(_ctx(tmp_path, {}, str(tmp_path)), settings) == "sst2"
    assert steps_finetune.task_name(_ctx(tmp_path, {}), settings) == "builtin_shuffled"


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_both_baselines_get_the_student_budget_and_the_models_are_settings(recipe):
    settings = RECIPES[recipe]
    budget = steps_finetune.STUDENT_PRETRAINING_STEPS[recipe]
    assert settings["bert_baseline"]["overrides"]["trainer.train_steps"] == budget
    assert settings["no_transfer"]["overrides"]["distillation.pretrain.steps"] == budget
    models = settings["finetune"]["models"]
    assert {"teacher", "pkt", "no_transfer", "bert_baseline"} <= set(models)
    if recipe == "laptop":
        assert all(
            models[m]["seeds"] >= 3 for m in ("teacher", "pkt", "no_transfer", "bert_baseline")
        )
    rates = {m: spec["overrides"]["trainer.learning_rate"] for m, spec in models.items()}
    assert rates["pkt"] == rates["no_transfer"], "one architecture, one learning rate"
    names = [s.name for s in STEPS]
    assert names.index("finetune") > max(names.index(m) for m in models if m in names)


def test_tiny_bert_is_a_plain_bert_of_the_students_size():
    config = get_preset("tiny_bert")
    bert = BertEncoder(config)  # refuses anything but a plain BERT config
    bert(dummy_inputs())
    student = count_params(build_encoder(get_preset("tiny_student")))
    assert count_params(bert) == count_params(build_encoder(config)) == 558_256
    assert student == 556_160 and abs(count_params(bert) / student - 1) < 0.01
    assert config.vocab_size == get_preset("tiny_student").vocab_size
    assert config.num_hidden_layers == get_preset("tiny_student").num_hidden_layers
