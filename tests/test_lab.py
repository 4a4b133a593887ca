"""The attention lab: its schedule, its measurement, its settings, and a tiny lab that
writes attention_lab.json and resumes."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib.data.structured_task import symbol
from mbert_lib.distill import losses
from mbert_lib.lab import variants
from mbert_lib.lab.data import MODEL_INPUTS, LabExamples, make_examples
from mbert_lib.lab.loop import Stage, StageRunner, StageSchedule
from mbert_lib.lab.measure import evaluate, rule_attention_mass
from mbert_lib.lab.run import (
    built_model,
    lab_models,
    read_weights,
    run_lab,
    settings_fingerprint,
)
from mbert_lib.lab.settings import lab_settings, student_config, teacher_config
from mbert_lib.lab.variants import AT_VARIANTS, LABELS, VARIANTS
from mbert_lib.pipeline.steps_lab import FAST_LAB, fast_lab_dir
from mbert_lib.viz.attention_explorer import AttentionExplorer

TINY = FAST_LAB


def test_the_stage_schedule_warms_up_then_decays_linearly():
    schedule = StageSchedule()
    schedule.peak.assign(2e-3)
    schedule.steps.assign(100.0)
    t = np.arange(0, 101)
    expected = 2e-3 * np.minimum(1, (t + 1) / 10) * (1 - 0.99 * t / 100)
    np.testing.assert_allclose([float(schedule(i)) for i in t], expected, rtol=1e-5)


class _Linear(tf_keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf_keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)


def test_chunked_updates_equal_one_update_per_call_in_plain_python():
    """StageRunner's chunks (a loop inside one compiled call) against the same Adam,
    schedule and batches stepped one by one outside tf.function."""
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(40, 3)).astype(np.float32)}
    data["y"] = (data["x"] @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
    order = [rng.permutation(40)[:8].astype(np.int32) for _ in range(7)]

    def loss_fn(model):
        return lambda batch, weights: (
            weights["w"] * tf.reduce_mean(tf.square(model(batch["x"]) - batch["y"]))
        )

    tf_keras.utils.set_random_seed(1)
    model = _Linear()
    model(data["x"][:1])
    start = model.get_weights()
    runner = StageRunner(model, data, jit_compile=False)
    seen = []
    runner.run_stage(
        Stage("s", loss_fn(model), weights={"w": 2.0}), iter(order), 7, 0.1, seen.append, every=3
    )
    assert seen == [3, 6, 7]

    plain = _Linear()
    plain(data["x"][:1])
    plain.set_weights(start)
    schedule = StageSchedule()
    schedule.peak.assign(0.1)
    schedule.steps.assign(7.0)
    adam = tf_keras.optimizers.Adam(schedule, clipnorm=1.0)
    for rows in order:
        with tf.GradientTape() as tape:
            loss = loss_fn(plain)({k: v[rows] for k, v in data.items()}, {"w": 2.0})
        adam.apply_gradients(
            zip(tape.gradient(loss, plain.trainable_variables), plain.trainable_variables)
        )
    for got, want in zip(model.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(model.get_weights()[0], start[0])


def test_rule_attention_mass_averages_the_probability_on_the_rule_target():
    rng = np.random.default_rng(0)
    probs = rng.random((3, 2, 6, 6)).astype(np.float32)  # [n, N, T, T]
    arrays = {
        "structured": np.array([[1, 0], [0, 0], [1, 1]], np.float32),
        "masked_lm_positions": np.array([[4, 1], [2, 3], [5, 3]], np.int32),
        "rule_target": np.array([[2, 0], [0, 0], [1, 0]], np.int32),
    }
    mass = rule_attention_mass([probs, 2 * probs], LabExamples(arrays, "x"))
    by_hand = [(probs[0, h, 4, 2] + probs[2, h, 5, 1] + probs[2, h, 3, 0]) / 3 for h in (0, 1)]
    np.testing.assert_allclose(mass, [by_hand, 2 * np.array(by_hand)], rtol=1e-6)


def _one_batch():
    """A tiny student, and one batch with the tiny teacher's targets (as the lab makes)."""
    settings = lab_settings(TINY)
    train = make_examples(settings, "train")
    teacher = built_model(teacher_config(settings), settings.task.seq_length)
    tf_keras.utils.set_random_seed(3)
    student = built_model(student_config(settings), settings.task.seq_length)
    batch = {k: v[:6] for k, v in train.arrays.items()}
    return student, {**batch, **variants.teacher_targets(teacher, batch, settings.num_layers)}


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variants_weighted_losses_equal_the_paper_terms_computed_directly(variant):
    """The weight-driven losses (one compiled step for every variant) against the paper's
    terms assembled in plain Python from `losses`, as each variant names them."""
    student, batch = _one_batch()
    spec = variants.VARIANT_SPECS[variant]
    out = student({k: batch[k] for k in MODEL_INPUTS}, training=True)
    pd = losses.pretraining_distillation(
        out["mlm_logits"],
        batch["teacher/mlm_logits"] if spec.distill else None,
        batch["masked_lm_ids"],
        batch["masked_lm_weights"],
        out["nsp_logits"],
        batch["next_sentence_labels"],
        alpha=0.5 if spec.distill else 1.0,
    )["loss"]

    def at(layer, probs):
        return losses.attention_transfer(
            batch[f"teacher/attention_{layer}"], probs, batch["input_mask"]
        )

    if spec.final_at:
        pd += sum(at(l, p) for l, p in enumerate(out["attention_scores"]))
    weights = {k: tf.constant(v) for k, v in spec.final_weights().items()}
    got = variants.final_loss(student)(batch, weights)
    np.testing.assert_allclose(float(got), float(pd), rtol=1e-5)
    for layer in (0, 1):
        want = 0.0
        if "fmt" in spec.layer_terms:
            want += losses.feature_map_transfer(
                batch[f"teacher/features_{layer}"],
                out["encoder_outputs"][layer],
                batch["input_mask"],
            )["fmt"]
        if "at" in spec.layer_terms:
            want += at(layer, out["attention_scores"][layer])
        weights = {k: tf.constant(v) for k, v in spec.layer_weights().items()}
        got = variants.layer_loss(student, layer)(batch, weights)
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5, atol=1e-7)


def test_a_layer_stage_trains_its_own_block_alone():
    """The paper's freezing: in layer 0's stage the embedding, block 1 and the heads keep
    their weights; block 0 moves."""
    student, batch = _one_batch()
    runner = StageRunner(student, batch, jit_compile=False)
    before = {id(v): v.numpy().copy() for v in student.trainable_variables}
    own = {id(v) for v in variants.stage_variables(student, 0)}
    rows = iter([np.arange(6, dtype=np.int32)] * 3)
    weights = variants.VARIANT_SPECS["pkt"].layer_weights(100.0)
    runner.run_stage(
        Stage(
            "layer0", variants.layer_loss(student, 0), variants.stage_variables(student, 0), weights
        ),
        rows,
        3,
        1e-2,
        None,
    )
    moved = {
        id(v) for v in student.trainable_variables if not np.array_equal(v.numpy(), before[id(v)])
    }
    assert moved and moved <= own


def test_a_term_left_out_is_not_computed_so_an_infinite_one_gives_no_nan():
    with tf.GradientTape() as tape:
        x = tf.Variable(0.0)
        tape.watch(x)
        loss = variants._term(tf.constant(0.0), lambda: tf.math.xlogy(1.0, x)) + x  # log 0
    assert float(loss) == 0.0 and float(tape.gradient(loss, x)) == 1.0


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"layer_steps": 4}, "attention_lab.layer_steps"),
        ({"seeds": 0}, "attention_lab.seeds"),
        ({"masked_lm_prob": 1.5}, "attention_lab.masked_lm_prob"),
        ({"task": {"name": "dyck"}}, "task.name"),
        ({"task": {"seq_length": 8}}, "task.seq_length"),
        ({"teacher_step": 5}, "attention_lab.teacher_step"),
    ],
)
def test_bad_lab_settings_are_refused_naming_the_key(changes, key):
    with pytest.raises(ValueError, match=key):
        lab_settings({**TINY, **changes})


def test_a_tiny_lab_writes_paired_seeds_and_resumes(tmp_path):
    settings = lab_settings(TINY)
    summary = run_lab(settings, fast_lab_dir(), print)  # shared with notebook 10
    written = json.loads((fast_lab_dir() / "attention_lab.json").read_text())
    assert written["students"] == summary["students"]
    assert set(summary["students"]) == set(VARIANTS) and set(AT_VARIANTS) < set(VARIANTS)
    for variant, accuracies in summary["students"].items():
        assert len(accuracies) == 2 and all(0 <= a <= 1 for a in accuracies)
        assert len(summary["rule_attention_mass"][variant]) == 2
    assert summary["chance"] == pytest.approx(1 / 12)
    task = settings.task
    assert summary["data"] == {"train": task.fingerprint(200, 1), "dev": task.fingerprint(40, 2)}
    layer, head = summary["rule_head"]["layer"], summary["rule_head"]["head"]
    per_head = np.array(summary["rule_attention_mass_per_head"]["teacher"])
    assert per_head.shape == (2, 2) and per_head[layer, head] == per_head.max()
    pkt = summary["students"]["pkt"]
    d = summary["paired"]["pkt - no_transfer"]
    assert d["mean"] == pytest.approx(np.mean(pkt) - np.mean(summary["students"]["no_transfer"]))
    # the curve of seed 0 starts at step 0 and ends at the budget
    assert [p[0] for p in summary["curves"]["pkt"]] == [0, 4, 8]
    shutil.copytree(fast_lab_dir() / "attention_lab", tmp_path / "attention_lab")
    lines = []
    again = run_lab(settings, tmp_path, lines.append)
    assert again["resumed"] and again["students"] == summary["students"]
    assert any("read back" in line for line in lines)
    # one student at a time trains the same students as two side by side: equal weights up
    # to float rounding (these steps are not XLA-compiled: TensorFlow's CPU kernels may
    # sum in another order under load, one at a time or not)
    alone = tmp_path / "one_thread"
    for name in ("teacher.json", "teacher_weights.npz"):
        (alone / "attention_lab").mkdir(parents=True, exist_ok=True)
        shutil.copy(fast_lab_dir() / "attention_lab" / name, alone / "attention_lab" / name)
    one = run_lab(settings, alone, print, student_threads=1)["students"]
    for variant, accuracies in summary["students"].items():
        assert one[variant] == pytest.approx(accuracies, abs=0.02), variant
    for path in (fast_lab_dir() / "attention_lab" / "students").glob("*.npz"):
        for a, b in zip(read_weights(path), read_weights(alone / path.relative_to(fast_lab_dir()))):
            # float rounding, grown over the students' steps: under a loaded test run the
            # copy-only student's output bias ended 1.5e-5 apart (6e-4 relative); and an
            # attention key bias has zero gradient (softmax ignores a shift shared by all
            # keys), so Adam turns rounding residue into steps. A student trained on the
            # wrong thread's model or batches would differ at the first decimal.
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-4, err_msg=path.name)
    # a student setting trains the students again, not the teacher; a task setting both
    records = [json.loads(p.read_text()) for p in (tmp_path / "attention_lab").rglob("*.json")]
    assert {r["fingerprint"] for r in records} == {
        settings_fingerprint(settings),
        settings_fingerprint(settings, teacher_only=True),
    }
    # the kept weights give back each record's numbers
    read, models = lab_models(fast_lab_dir(), seed=1)
    assert read == settings
    dev = make_examples(settings, "dev")
    for variant in VARIANTS:
        got = evaluate(models[variant], dev)
        assert got["structured_accuracy"] == summary["students"][variant][1], variant
    before = evaluate(models["before transfer"], dev)["rule_attention_mass"][layer][head]
    assert before == summary["rule_attention_mass"]["before_transfer"][1]
    explorer = AttentionExplorer.from_lab(fast_lab_dir(), seed=1)  # the explorer opens it
    assert list(explorer.snapshots) == ["before transfer", *(LABELS[v] for v in VARIANTS)]
    for a, b in zip(explorer.snapshots["AT only"].weights, models["at_only"].weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    sentence = " ".join(symbol(i) for i in (3, 1, 4, 3, 1, 4, 3))
    view = explorer.view(sentence, layer, head, "AT only")
    assert view["tokens"][1:-1] == sentence.split() and "reference_layer_kl" in view
    with pytest.raises(ValueError, match="seed must be in 0..1"):
        lab_models(fast_lab_dir(), seed=2)
    students = lab_settings({**TINY, "student_steps": 10})
    assert settings_fingerprint(students) != settings_fingerprint(settings)
    assert settings_fingerprint(students, True) == settings_fingerprint(settings, True)
    task = lab_settings({**TINY, "task": {**TINY["task"], "num_symbols": 13}})
    assert settings_fingerprint(task, True) != settings_fingerprint(settings, True)


def test_the_lab_recipe_runs_its_one_step_and_refuses_the_reproductions_options(tmp_path):
    from mbert_lib.pipeline import make_context
    from mbert_lib.pipeline.registry import own_steps

    assert [s.name for s in own_steps("attention_lab")] == ["attention_lab"]
    assert own_steps("laptop") is None
    assert make_context("attention_lab", str(tmp_path)).settings["attention_lab"]["seeds"] == 3
    with pytest.raises(ValueError, match="--teacher and --mixed_precision"):
        make_context("attention_lab", str(tmp_path), teacher="shipped")
