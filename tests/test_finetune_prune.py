"""Fine-tuning with magnitude pruning (`prune.sparsity`): the exported classifier has the
schedule's zeros in every block kernel and nowhere else, computes what the run evaluated,
resumes from a kill to the same weights, and refuses settings that cannot mean a pruned
model."""

import os

import numpy as np
import pytest

from mbert_lib.checkpoints import load_classifier
from mbert_lib.compress import pruning
from mbert_lib.finetune import trainer
from mbert_lib.finetune.data import load_task_data
from mbert_lib.finetune.evaluate import make_predictor
from mbert_lib.train import progress
from tests.finetune_fixtures import experiment, save_pretrained, tokenizer, write_sst2

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

QUIET = dict(show_progress=False, log=lambda _: None)
PRUNED = "trainer.train_steps=64,prune.sparsity=0.75,prune.frequency=5"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("prune")
    return save_pretrained(root / "pretrained"), write_sst2(root / "data")


@pytest.fixture(scope="module")
def pruned(setup, tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("pruned"))
    return model_dir, trainer.run_finetuning(experiment(*setup, PRUNED), model_dir, **QUIET)


def test_every_block_kernel_ends_at_the_final_sparsity_and_the_rest_stays_dense(pruned, setup):
    model_dir, record = pruned
    model = load_classifier(model_dir)
    per_kernel = pruning.kernel_sparsity(model)
    assert len(per_kernel) == len(pruning.pruning_targets(model))
    assert all(s == pytest.approx(0.75, abs=0.02) for s in per_kernel.values()), per_kernel
    assert record["sparsity"] == pytest.approx(pruning.overall_sparsity(model), abs=1e-6)
    targets = {v.ref() for v in (getattr(o, n).kernel for o, n in pruning.pruning_targets(model))}
    others = [v for v in model.weights if v.ref() not in targets and v.shape.rank == 2]
    assert others and all(np.mean(v.numpy() == 0) < 0.05 for v in others), [
        (v.name, np.mean(v.numpy() == 0)) for v in others
    ]


def test_the_exported_pruned_classifier_scores_what_the_run_recorded(pruned, setup):
    model_dir, record = pruned
    data = load_task_data(experiment(*setup).task, tokenizer())
    logits = make_predictor(load_classifier(model_dir), 12)(data.dev.features)
    accuracy = np.mean(np.argmax(logits, -1) == data.dev.labels)
    assert accuracy == pytest.approx(record["eval"]["accuracy"])
    assert accuracy >= 0.9, record["eval"]  # the separable task survives 75 % zeros


def test_a_killed_pruned_run_resumes_to_the_same_weights(pruned, setup, tmp_path, monkeypatch):
    update, steps = progress.Progress.update, []

    def killed_at_step_25(self, metrics):  # after the checkpoint of step 16, mid-schedule
        update(self, metrics)
        steps.append(1)
        if len(steps) == 25:
            raise KeyboardInterrupt("simulated kill")

    run = experiment(*setup, PRUNED)
    monkeypatch.setattr(trainer, "CHECKPOINT_STEPS", 10)
    monkeypatch.setattr(progress.Progress, "update", killed_at_step_25)
    with pytest.raises(KeyboardInterrupt):
        trainer.run_finetuning(run, str(tmp_path), **QUIET)
    monkeypatch.setattr(progress.Progress, "update", update)
    messages = []
    record = trainer.run_finetuning(run, str(tmp_path), show_progress=False, log=messages.append)
    assert any("resumed from" in m for m in messages), messages
    assert record["sparsity"] == pytest.approx(pruned[1]["sparsity"])
    for a, b in zip(
        load_classifier(pruned[0]).weights, load_classifier(tmp_path).weights, strict=True
    ):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=a.name)
    assert not os.path.exists(tmp_path / "checkpoints")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ("prune.sparsity=1.0", r"prune.sparsity must be a number in \[0, 1\)"),
        ("prune.sparsity=0.5", r"trainer.train_steps must be set when prune.sparsity > 0"),
        (
            "trainer.train_steps=40,prune.sparsity=0.5,prune.begin_fraction=0.8",
            r"prune.begin_fraction and prune.end_fraction must be 0 <= begin_fraction",
        ),
    ],
)
def test_settings_that_cannot_mean_a_pruned_model_are_refused(setup, overrides, message):
    with pytest.raises(ValueError, match=message):
        experiment(*setup, overrides)
