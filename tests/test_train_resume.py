"""Kill and resume gives the same model as an uninterrupted run; a finished run is not redone."""

import os

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.train import progress
from mbert_lib.train.checkpointing import DONE_FILE, read_done
from mbert_lib.train.pretrain import run_pretraining
from mbert_lib.train.pretrain_data import PretrainingData, build_pretraining_datasets
from tests.train_fixtures import tiny_experiment

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

RUN = "trainer.train_steps=8,trainer.checkpoint_interval=4,trainer.eval_interval=8"


def save_vocab(directory):
    with open(os.path.join(directory, "vocab.txt"), "w") as f:
        f.write("[PAD]\n[CLS]\n")


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """8 steps without interruption, with a tokenizer hook."""
    model_dir = str(tmp_path_factory.mktemp("straight"))
    experiment = tiny_experiment(RUN)
    data = build_pretraining_datasets(experiment)
    data = PretrainingData(data.train, data.eval, save_tokenizer=save_vocab)
    run_pretraining(experiment, model_dir, data=data, show_progress=False, log=lambda _: None)
    return model_dir


def test_killed_run_resumes_at_the_same_step_and_data_position(straight, tmp_path, monkeypatch):
    model_dir, experiment = str(tmp_path), tiny_experiment(RUN)
    update, steps = progress.Progress.update, []

    def killed_after_step_6(self, metrics):
        update(self, metrics)
        steps.append(1)
        if len(steps) == 6:
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(progress.Progress, "update", killed_after_step_6)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(experiment, model_dir, show_progress=False, log=lambda _: None)
    assert read_done(model_dir) is None
    assert tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")).endswith("ckpt-4")
    monkeypatch.undo()

    messages = []
    record = run_pretraining(experiment, model_dir, show_progress=False, log=messages.append)
    assert any("resumed from" in m and "at step 4" in m for m in messages), messages
    assert record["train_steps"] == 8
    resumed, uninterrupted = load_pretrainer(model_dir), load_pretrainer(straight)
    for a, b in zip(uninterrupted.weights, resumed.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7, err_msg=a.name)
    assert read_done(model_dir)["eval"] == pytest.approx(read_done(straight)["eval"], rel=1e-5)


def test_finished_run_is_not_redone(straight):
    weights = os.path.join(straight, "model.ckpt.index")
    before = os.stat(weights).st_mtime_ns
    messages = []
    record = run_pretraining(
        tiny_experiment(RUN), straight, show_progress=False, log=messages.append
    )
    assert messages and messages[0].startswith("already done")
    assert record == read_done(straight)
    assert os.stat(weights).st_mtime_ns == before


def test_run_leaves_checkpoints_export_tokenizer_and_eval(straight):
    names = set(os.listdir(straight))
    assert {
        "bert_config.json",
        "model.ckpt.index",
        "vocab.txt",
        "experiment.yaml",
        DONE_FILE,
        "checkpoints",
        "tensorboard",
    } <= names
    checkpoints = tf.train.get_checkpoint_state(os.path.join(straight, "checkpoints"))
    assert [os.path.basename(p) for p in checkpoints.all_model_checkpoint_paths] == [
        "ckpt-4",
        "ckpt-8",
    ]
    metrics = read_done(straight)["eval"]
    assert {"mlm_accuracy", "nsp_accuracy", "perplexity"} <= set(metrics)
    assert metrics["perplexity"] == pytest.approx(np.exp(metrics["mlm_loss"]))
    model = load_pretrainer(straight)
    assert model.config == tiny_experiment().model.build_config()


def test_tensorboard_has_the_scalars(straight):
    def tags(split):
        found = set()
        directory = os.path.join(straight, "tensorboard", split)
        for name in os.listdir(directory):
            for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
                found |= {v.tag for v in event.summary.value}
        return found

    assert {
        "loss",
        "mlm_loss",
        "nsp_loss",
        "learning_rate",
        "grad_norm",
        "tokens_per_second",
    } <= tags("train")
    assert {"mlm_accuracy", "nsp_accuracy", "perplexity"} <= tags("eval")


def test_a_different_model_in_the_same_model_dir_is_refused(straight):
    changed = tiny_experiment(RUN + ",trainer.train_steps=12,model.overrides.num_hidden_layers=2")
    with pytest.raises(
        ValueError,
        match=r"holds an unfinished run of other settings .*"
        r"changed: \['model.overrides.num_hidden_layers'\]",
    ):
        run_pretraining(changed, straight, show_progress=False, log=lambda _: None)


def test_exported_model_must_match_its_config(straight, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(straight, copy)
    tiny_experiment().model.build_config().replace(num_hidden_layers=2).to_json_file(
        copy / "bert_config.json"
    )
    with pytest.raises(ValueError, match="do not match the config"):
        load_pretrainer(copy)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="found 0 checkpoint"):
        load_pretrainer(tmp_path / "empty")


def test_a_finished_run_asked_with_other_training_settings_is_refused(straight):
    """A finished directory holds the run its experiment.yaml describes: asked again with
    another learning rate it says so; with another log interval it is simply done."""
    messages = []
    run_pretraining(
        tiny_experiment(RUN + ",trainer.log_interval=3"),
        straight,
        show_progress=False,
        log=messages.append,
    )
    assert messages[0].startswith("already done")
    with pytest.raises(
        ValueError,
        match=r"finished run of other settings .*changed: "
        r"\['trainer.learning_rate.peak'\]",
    ):
        run_pretraining(
            tiny_experiment(RUN + ",trainer.learning_rate.peak=0.5"),
            straight,
            show_progress=False,
            log=lambda _: None,
        )


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_a_lost_checkpoint_list_is_rebuilt_from_the_files_not_a_fresh_start(
    straight, tmp_path, monkeypatch, damage
):
    """Killed after step 6 (ckpt-4 on disk), then the `checkpoint` state file is deleted or
    garbled: the run resumes from ckpt-4, names what it rebuilt, and ends like the
    uninterrupted run, instead of starting afresh over the checkpoints."""
    model_dir, experiment = str(tmp_path), tiny_experiment(RUN)
    update, steps = progress.Progress.update, []

    def killed_after_step_6(self, metrics):
        update(self, metrics)
        steps.append(1)
        if len(steps) == 6:
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(progress.Progress, "update", killed_after_step_6)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(experiment, model_dir, show_progress=False, log=lambda _: None)
    monkeypatch.undo()
    state = os.path.join(model_dir, "checkpoints", "checkpoint")
    if damage == "missing":
        os.remove(state)
    else:
        with open(state, "w") as f:
            f.write("model_checkpoint_path: {{{ not a checkpoint list\n")
    messages = []
    run_pretraining(experiment, model_dir, show_progress=False, log=messages.append)
    assert any("read the 1 checkpoint(s) on disk instead (ckpt-4)" in m for m in messages)
    assert any("resumed from" in m and "at step 4" in m for m in messages), messages
    assert not any("starting a fresh run" in m for m in messages)
    assert read_done(model_dir)["eval"] == pytest.approx(read_done(straight)["eval"], rel=1e-5)
