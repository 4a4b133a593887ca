"""The pipeline recipes are data (experiments/recipes/*.yaml): complete, unshared,
and holding the rules their comments state."""

import pytest

from mbert_lib.config_tree import apply_overrides
from mbert_lib.distill.plan import plan_stages, total_steps
from mbert_lib.experiment.distill import load_distill_experiment
from mbert_lib.pipeline import recipe_settings, registry
from mbert_lib.pipeline.core import PipelineError
from mbert_lib.pipeline.steps_distill import ROW_NAMES
from mbert_lib.pipeline.steps_finetune import STUDENT_PRETRAINING_STEPS
from mbert_lib.pipeline.steps_report import RECIPE_KEY
from mbert_lib.runtime import REPO_ROOT

RECIPE_NAMES = recipe_settings.reproduction_recipes()


def test_both_recipes_are_files_with_a_setting_for_every_step():
    assert RECIPE_NAMES == ["laptop", "smoke"]
    steps = sorted(s.name for s in registry.STEPS)
    for name in RECIPE_NAMES:
        assert sorted(registry.RECIPES[name]) == steps
        assert registry.RECIPES[name]["report"]["order"][0] == "data"
        assert not any(step.startswith(".") for step in registry.RECIPES[name])
        assert registry.RECIPES[name]["report"][RECIPE_KEY] == name  # the report names it


@pytest.mark.parametrize("recipe", RECIPE_NAMES)
def test_every_distillation_row_gives_the_student_the_baselines_budget(recipe):
    settings = recipe_settings.load_recipe_settings(recipe)
    budget = STUDENT_PRETRAINING_STEPS[recipe]
    updates = {}
    for row in ROW_NAMES:
        experiment = apply_overrides(
            load_distill_experiment(REPO_ROOT / settings[row]["config_file"]),
            list(settings[row]["overrides"].items()),
        )
        layers = experiment.student.build_config().num_hidden_layers
        updates[row] = total_steps(plan_stages(experiment.distillation, layers))
    assert updates.pop("ablation_fmt_at") < budget  # the layer-wise stages only, no PD
    assert updates == dict.fromkeys(updates, budget)
    assert settings["bert_baseline"]["overrides"]["trainer.train_steps"] == budget


@pytest.mark.parametrize("recipe", RECIPE_NAMES)
def test_the_seed_rows_are_the_table_rows_and_share_no_objects_with_them(recipe):
    settings = recipe_settings.load_recipe_settings(recipe)
    seeds = settings["distill_seeds"]
    for row, row_settings in seeds["rows"].items():
        assert row_settings == settings[row]
        assert row_settings is not settings[row]
    rates = {
        spec["overrides"]["trainer.learning_rate"] for spec in seeds["finetune"]["models"].values()
    }
    assert rates == {settings["finetune"]["models"]["pkt"]["overrides"]["trainer.learning_rate"]}
    seeds["rows"]["pkt"]["overrides"]["distillation.pretrain.steps"] = -1
    assert settings["pkt"]["overrides"]["distillation.pretrain.steps"] > 0


def test_a_recipe_missing_a_step_or_naming_an_unknown_one_is_refused(tmp_path, monkeypatch):
    text = (recipe_settings.RECIPE_DIR / "smoke.yaml").read_text(encoding="utf-8")
    (tmp_path / "broken.yaml").write_text(
        text.replace("\ntransfer:\n", "\ntransfers:\n"), encoding="utf-8"
    )
    monkeypatch.setattr(recipe_settings, "RECIPE_DIR", tmp_path)
    with pytest.raises(PipelineError, match=r"missing \['transfer'\], unknown \['transfers'\]"):
        registry._with_step_order("broken")
    with pytest.raises(ValueError, match="unknown recipe 'laptop'; known recipes: \\['broken'\\]"):
        recipe_settings.load_recipe_settings("laptop")
