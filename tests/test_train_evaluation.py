"""Evaluating a saved run: metrics vs numpy, masks filled, state restored, LAMB's next step,
and the compute arithmetic."""

import math

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib import build_pretrainer, count_params
from mbert_lib.anatomy import flops
from mbert_lib.anatomy.compute import pretraining_compute
from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.data.tokenizer import WordPieceTokenizer
from mbert_lib.optim.trust import lamb_step_report
from mbert_lib.train.evaluation import evaluate_pretrainer, fill_masks
from mbert_lib.train.pretrain import run_pretraining
from mbert_lib.train.state import pretraining_gradients, restore_training_state
from tests.train_fixtures import VOCAB, tiny_batches, tiny_config, tiny_experiment

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it


def arrays(num_examples=20, seed=3):
    batch = next(iter(tiny_batches(num_examples, batch_size=num_examples, seed=seed)))
    return {k: v.numpy() for k, v in batch.items()}


def test_evaluate_pretrainer_matches_numpy():
    model = build_pretrainer(tiny_config())
    data = arrays()
    metrics = evaluate_pretrainer(model, data, batch_size=7)  # 3 batches, last partial
    out = model(
        {
            k: data[k]
            for k in ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
        },
        training=False,
    )
    mlm = out["mlm_logits"].numpy().astype(np.float64)  # [n, P, V]
    log_p = mlm - np.log(np.exp(mlm).sum(-1, keepdims=True))
    ids, w = data["masked_lm_ids"], data["masked_lm_weights"]
    ce = -np.take_along_axis(log_p, ids[..., None], -1)[..., 0]
    assert metrics["mlm_loss"] == pytest.approx((ce * w).sum() / w.sum(), rel=1e-5)
    assert metrics["perplexity"] == pytest.approx(math.exp(metrics["mlm_loss"]), rel=1e-9)
    assert metrics["mlm_accuracy"] == pytest.approx(((mlm.argmax(-1) == ids) * w).sum() / w.sum())
    nsp = out["nsp_logits"].numpy()
    assert metrics["nsp_accuracy"] == pytest.approx(
        np.mean(nsp.argmax(-1) == data["next_sentence_labels"])
    )
    assert metrics["examples"] == 20


def test_fill_masks_lists_every_target():
    model = build_pretrainer(tiny_config())
    data = arrays()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(VOCAB - 5)]
    table = fill_masks(model, data, 2, WordPieceTokenizer(vocab), top_k=2)
    weights = data["masked_lm_weights"][2] > 0
    assert len(table) == weights.sum()
    assert list(table.original) == [vocab[i] for i in data["masked_lm_ids"][2][weights]]
    assert table["p(original)"].between(0, 1).all()
    assert all(len(g.split(", ")) == 2 for g in table.guesses)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("run"))
    experiment = tiny_experiment(
        "trainer.train_steps=6,trainer.checkpoint_interval=3,"
        "trainer.eval_interval=6,trainer.learning_rate.decay_steps=100"
    )
    run_pretraining(experiment, model_dir, show_progress=False, log=lambda _: None)
    return model_dir


def test_restored_state_is_the_final_model_and_optimizer(finished_run):
    state = restore_training_state(finished_run)
    assert state.step == 6 and int(state.optimizer.iterations) == 6
    assert state.checkpoint.endswith("ckpt-6")
    exported = load_pretrainer(finished_run)
    for a, b in zip(exported.weights, state.model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
    fresh = restore_training_state(finished_run, restore=False)
    assert fresh.step == 0 and int(fresh.optimizer.iterations) == 0 and fresh.checkpoint is None


def test_report_on_a_restored_state_predicts_the_next_step(finished_run):
    state = restore_training_state(finished_run)
    batch = {k: tf.constant(v) for k, v in arrays(8, seed=5).items()}
    loss, grads = pretraining_gradients(state.model, batch)
    assert np.isfinite(loss)
    variables = state.model.trainable_variables
    report = lamb_step_report(state.optimizer, grads, variables)
    assert len(report) == len(variables)
    before = [v.numpy() for v in variables]
    state.optimizer.apply_gradients(zip(grads, variables))
    moved = [np.linalg.norm(v.numpy() - b) for v, b in zip(variables, before)]
    np.testing.assert_allclose(report.step_norm, moved, rtol=1e-4, atol=1e-7)
    adapted = report[report.adapted]
    np.testing.assert_allclose(adapted.relative_step, adapted.learning_rate, rtol=1e-4)


def test_restore_needs_a_run_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="experiment.yaml"):
        restore_training_state(tmp_path)


def test_pretraining_compute_counts_the_built_heads():
    experiment = tiny_experiment("trainer.train_steps=10")
    config = experiment.model.build_config()
    compute = pretraining_compute(experiment)
    model = build_pretrainer(config)
    assert compute["params"] == count_params(model)
    assert compute["tokens"] == 10 * experiment.trainer.batch_size * experiment.data.seq_length
    # MLM head matmuls on P targets, from the built weights: transform H x H, then the
    # output layer against the [V, E] table and the [V, H - E] extra weights.
    P = experiment.data.max_predictions_per_seq
    head = model.masked_lm
    macs = sum(
        int(tf.size(w))
        for w in head.weights
        if w.name.endswith(("transform/kernel:0", "extra_output_weights:0"))
    )
    macs += config.vocab_size * config.embedding_size
    forward = flops(config, experiment.data.seq_length) + 2 * P * macs
    assert compute["forward_flops_per_sequence"] == forward
    assert compute["train_flops"] == 3 * forward * 10 * experiment.trainer.batch_size
