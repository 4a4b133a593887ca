"""Fine-tuning a tiny model: it learns, keeps its best epoch, resumes exactly, refuses bad input."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.checkpoints import CheckpointMismatchError, load_classifier
from mbert_lib.data.errors import DataError
from mbert_lib.finetune import trainer
from mbert_lib.finetune.best import BestKeeper
from mbert_lib.finetune.data import load_task_data
from mbert_lib.finetune.evaluate import make_predictor
from mbert_lib.finetune.tasks import get_task
from mbert_lib.train import progress
from tests.finetune_fixtures import CONFIG, experiment, save_pretrained, tokenizer, write_sst2

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

QUIET = dict(show_progress=False, log=lambda _: None)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("finetune")
    return save_pretrained(root / "pretrained"), write_sst2(root / "data")


@pytest.fixture(scope="module")
def straight(setup, tmp_path_factory):
    """3 epochs of 16 steps, uninterrupted."""
    model_dir = str(tmp_path_factory.mktemp("straight"))
    return model_dir, trainer.run_finetuning(
        experiment(*setup, "trainer.epochs=3"), model_dir, **QUIET
    )


def dev_logits(model_dir, setup):
    model = load_classifier(model_dir)
    data = load_task_data(experiment(*setup).task, tokenizer())
    return make_predictor(model, 12)(data.dev.features), data.dev.labels


def test_a_tiny_model_learns_a_separable_task(straight, setup):
    model_dir, record = straight
    assert record["task"] == "sst2" and record["metric"] == "accuracy"
    assert record["eval"]["accuracy"] >= 0.95, record["history"]
    assert [h["epoch"] for h in record["history"]] == [1, 2, 3]
    assert record["truncated"] == {"train": 0, "dev": 0}
    logits, labels = dev_logits(model_dir, setup)  # the exported classifier, evaluated again
    assert np.mean(np.argmax(logits, -1) == labels) == pytest.approx(record["eval"]["accuracy"])
    assert not os.path.exists(os.path.join(model_dir, "checkpoints"))
    assert {"loss", "accuracy", "examples_per_second"} <= train_tags(model_dir)
    assert "tokens_per_second" not in train_tags(model_dir)  # batches may be cut below T


def train_tags(model_dir):
    """The scalar tags of a run's TensorBoard train/ logs."""
    directory = os.path.join(model_dir, "tensorboard", "train")
    return {
        value.tag
        for name in os.listdir(directory)
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name))
        for value in event.summary.value
    }


def test_the_best_epoch_is_exported_not_the_last(setup, tmp_path, monkeypatch):
    seen = []

    def evaluate_and_remember(task, predict, data):
        metrics = real_evaluate(task, predict, data)
        seen.append(predict(data.features))
        if len(seen) == 1:  # make epoch 1 the best, whatever it scored
            metrics["accuracy"] += 10.0
        return metrics

    real_evaluate = trainer.evaluate
    monkeypatch.setattr(trainer, "evaluate", evaluate_and_remember)
    record = trainer.run_finetuning(experiment(*setup, "trainer.epochs=3"), tmp_path, **QUIET)
    assert record["best_epoch"] == 1 and record["best_step"] == 16 and len(seen) == 3
    exported, _ = dev_logits(tmp_path, setup)
    np.testing.assert_allclose(exported, seen[0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(exported, seen[-1], atol=1e-3)


def test_best_keeper_keeps_the_first_of_equals_and_resumes_its_history(tmp_path):
    saved = []
    keeper = BestKeeper(tmp_path, "f1", saved.append)
    assert keeper.record(10, {"f1": 0.6}, epoch=1)
    assert keeper.record(20, {"f1": 0.8}, epoch=2)
    assert not keeper.record(30, {"f1": 0.8}, epoch=3)
    assert not keeper.record(40, {"f1": 0.7}, epoch=4)
    assert saved == [keeper.best_dir] * 2 and keeper.best["step"] == 20
    again = BestKeeper(tmp_path, "f1", saved.append)
    assert again.best == keeper.best and again.evaluated(30) and not again.evaluated(35)
    with pytest.raises(ValueError, match="no 'f1'"):
        again.record(50, {"accuracy": 1.0})


def test_killed_runs_resume_to_the_uninterrupted_result(straight, setup, tmp_path, monkeypatch):
    model_dir, run = str(tmp_path), experiment(*setup, "trainer.epochs=3")

    def killed_in_evaluation(*args):  # after epoch 1's checkpoint, before its evaluation
        raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(trainer, "evaluate", killed_in_evaluation)
    with pytest.raises(KeyboardInterrupt):
        trainer.run_finetuning(run, model_dir, **QUIET)
    monkeypatch.undo()
    assert not os.path.exists(os.path.join(model_dir, "history.json"))

    update, steps = progress.Progress.update, []

    def killed_in_epoch_2(self, metrics):
        update(self, metrics)
        steps.append(1)
        if len(steps) == 5:
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(progress.Progress, "update", killed_in_epoch_2)
    messages = []
    with pytest.raises(KeyboardInterrupt):
        trainer.run_finetuning(run, model_dir, show_progress=False, log=messages.append)
    monkeypatch.undo()
    assert any("resumed from" in m and "at step 16" in m for m in messages), messages
    with open(os.path.join(model_dir, "history.json"), encoding="utf-8") as f:
        assert [h["step"] for h in json.load(f)] == [16]

    record = trainer.run_finetuning(run, model_dir, **QUIET)
    expected = straight[1]
    assert [h["step"] for h in record["history"]] == [16, 32, 48]
    for got, want in zip(record["history"], expected["history"], strict=True):
        assert got["metrics"] == pytest.approx(want["metrics"], rel=1e-4, abs=1e-5)
    for a, b in zip(
        load_classifier(straight[0]).weights, load_classifier(model_dir).weights, strict=True
    ):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=a.name)


def test_a_finished_run_is_not_redone_and_another_run_is_refused(straight, setup):
    model_dir, record = straight
    messages = []
    again = trainer.run_finetuning(
        experiment(*setup, "trainer.epochs=3"), model_dir, show_progress=False, log=messages.append
    )
    assert again == record and messages[0].startswith("already done")
    with pytest.raises(ValueError, match=r"finished run of other settings.*trainer.learning_rate"):
        trainer.run_finetuning(
            experiment(*setup, "trainer.epochs=3,trainer.learning_rate=1e-3"), model_dir, **QUIET
        )


def test_truncation_is_reported_before_training(setup, tmp_path):
    messages = []
    with pytest.raises(ValueError, match="fewer than one batch of 1000"):
        trainer.run_finetuning(
            experiment(*setup, "task.seq_length=6,trainer.batch_size=1000"),
            tmp_path,
            show_progress=False,
            log=messages.append,
        )
    note = next(m for m in messages if "of 256 train examples" in m)
    assert "longer than seq_length 6, truncated (longest: 7 tokens)" in note
    assert not note.startswith("0 of")


def test_a_checkpoint_that_does_not_match_its_config_is_refused(setup, tmp_path):
    copy = tmp_path / "pretrained"
    shutil.copytree(setup[0], copy)
    CONFIG.replace(num_hidden_layers=1).to_json_file(copy / "bert_config.json")
    with pytest.raises(CheckpointMismatchError, match="do not match the config"):
        trainer.run_finetuning(experiment(copy, setup[1]), tmp_path / "run", **QUIET)


def test_a_tokenizer_of_another_vocabulary_is_refused(setup, tmp_path):
    copy = tmp_path / "pretrained"
    shutil.copytree(setup[0], copy)
    with open(copy / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("extra\n")
    with pytest.raises(
        DataError,
        match="vocab_size mismatch: the tokenizer has 22 tokens but "
        "the model config has vocab_size=21",
    ):
        trainer.run_finetuning(experiment(copy, setup[1]), tmp_path / "run", **QUIET)
    os.remove(copy / "vocab.txt")
    with pytest.raises(FileNotFoundError, match="has no vocab.txt.*task.vocab_file"):
        trainer.run_finetuning(experiment(copy, setup[1]), tmp_path / "run", **QUIET)


def test_bad_labels_and_a_missing_init_checkpoint_are_clear_errors(setup, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(setup[1], data_dir)
    with open(data_dir / "glue" / "SST-2" / "dev.tsv", "a", encoding="utf-8") as f:
        f.write("the movie was good\t2\n")
    with pytest.raises(DataError, match="dev.tsv:66: label must be 0 or 1, got '2'"):
        trainer.run_finetuning(experiment(setup[0], data_dir), tmp_path / "run", **QUIET)
    with pytest.raises(ValueError, match="model.init_checkpoint is not set"):
        trainer.run_finetuning(
            experiment(setup[0], data_dir, "model.init_checkpoint=null"), tmp_path / "run", **QUIET
        )


def test_a_regression_pair_task_trains_end_to_end(setup, tmp_path):
    stsb = tmp_path / "STS-B"
    stsb.mkdir()
    rng = np.random.default_rng(0)
    for split in ("train", "dev"):
        rows = [
            f"the movie\tthe {rng.choice(['film', 'plot'])} was good\t{rng.uniform(0, 5):.2f}"
            for _ in range(32)
        ]
        (stsb / f"{split}.tsv").write_text("sentence1\tsentence2\tscore\n" + "\n".join(rows))
    record = trainer.run_finetuning(
        experiment(
            setup[0], tmp_path, "task.name=stsb,trainer.epochs=1,trainer.learning_rate=1e-3"
        ),
        tmp_path / "run",
        **QUIET,
    )
    assert record["metric"] == "spearman" and set(record["eval"]) >= {"spearman", "pearson"}
    assert np.isfinite(record["eval"]["loss"])
    assert load_classifier(tmp_path / "run").num_classes == 1
    assert get_task("stsb").is_regression


def test_a_mean_pooled_classifier_learns_and_is_exported_with_its_pooling(setup, tmp_path):
    """model.pooling=mean: the head reads every token's average; the exported classifier's
    bert_config.json says so, and reloading it gives the logits the run evaluated."""
    model_dir = str(tmp_path / "mean")
    record = trainer.run_finetuning(experiment(*setup, "model.pooling=mean"), model_dir, **QUIET)
    assert record["eval"]["accuracy"] >= 0.95, record["history"]
    with open(os.path.join(model_dir, "bert_config.json"), encoding="utf-8") as f:
        assert json.load(f)["classifier_pooling"] == "mean"
    logits, labels = dev_logits(model_dir, setup)
    assert np.mean(np.argmax(logits, -1) == labels) == pytest.approx(record["eval"]["accuracy"])


def test_a_frozen_encoder_keeps_its_weights_and_only_the_head_learns(setup, tmp_path):
    """model.freeze_encoder: the feature-based use of a pre-trained model. The exported
    encoder equals the pre-trained one weight for weight; the head moved."""
    from mbert_lib.checkpoints import load_encoder

    init, _ = setup
    model_dir = str(tmp_path / "frozen")
    overrides = "model.freeze_encoder=true,model.pooling=mean,model.dropout_rate=0.1"
    trainer.run_finetuning(experiment(*setup, overrides), model_dir, **QUIET)
    before, after = load_encoder(init), load_classifier(model_dir)
    assert len(before.weights) == len(after.encoder.weights)
    for a, b in zip(before.weights, after.encoder.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
    head = after.head.dense.kernel.numpy()
    assert np.abs(head).max() > 0.04  # the initializer cuts at 2 × 0.02: the head moved
