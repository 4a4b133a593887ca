"""The attention explorer against an independent numpy computation of the same attention.

Tiny random models: a 3-layer IB-BERT teacher and a 2-layer student (student layer l
learns teacher layer LAYER_MAP[l]) over an 18-word vocabulary; a fake progressive run
directory of checkpoints for the snapshot names.
"""

import math
import os
import shutil

import matplotlib
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mbert_lib import get_preset
from mbert_lib.checkpoints import save_model_dir
from mbert_lib.config_tree import apply_overrides, save_yaml
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer, save_tokenizer
from mbert_lib.distill.analysis import block_variable
from mbert_lib.distill.plan import plan_stages
from mbert_lib.distill.trainer import EXPERIMENT_FILE, init_dir, stage_dir
from mbert_lib.models import build_pretrainer
from mbert_lib.viz import attention_explorer as ae
from tests.distill_fixtures import tiny_distill_experiment

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend)

WORDS = ["the", "a", "film", "plot", "was", "is", "very", "good", "bad", "and"]
TOKENIZER = WordPieceTokenizer(list(SPECIAL_TOKENS) + WORDS + [f"w{i}" for i in range(3)])
SMALL = {
    "vocab_size": TOKENIZER.vocab_size,
    "max_position_embeddings": 32,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
}
LAYER_MAP = (1, 2)
SENTENCE = "the film was very good"
TOKENS = ["[CLS]", "the", "film", "was", "very", "good", "[SEP]"]
SEQ = 12  # 5 padding positions


@pytest.fixture(scope="module")
def models():
    teacher = build_pretrainer(get_preset("tiny_teacher").replace(num_hidden_layers=3, **SMALL))
    student = build_pretrainer(get_preset("tiny_student").replace(num_hidden_layers=2, **SMALL))
    return teacher, student


@pytest.fixture(scope="module")
def explorer(models):
    teacher, student = models
    return ae.AttentionExplorer(teacher, {"final": student}, TOKENIZER, LAYER_MAP, SEQ)


def numpy_attention(model, sentence, seq_length=None):
    """Every block's A = softmax(Q Kᵀ / sqrt(d) + M) over the real tokens [L, N, T, T] in
    float64, from the query and key inputs each attention layer receives and its kernels;
    the sentence padded with [PAD] to seq_length, M = -inf on padding keys."""
    ids = [TOKENIZER.cls_id] + TOKENIZER.encode(sentence) + [TOKENIZER.sep_id]
    real = len(ids)
    ids += [TOKENIZER.pad_id] * ((seq_length or real) - real)
    mask = np.arange(len(ids)) < real
    seen = []
    for block in model.encoder.blocks:
        layer, call = block.attention, block.attention.call

        def spy(query, key, value, attention_mask=None, training=None, layer=layer, call=call):
            seen.append((layer, query.numpy(), key.numpy()))
            return call(query, key, value, attention_mask, training=training)

        layer.call = spy
    try:
        model.encoder(
            {
                "input_word_ids": tf.constant([ids]),
                "input_mask": tf.constant([mask.astype(np.int32)]),
            },
            training=False,
        )
    finally:
        for block in model.encoder.blocks:
            del block.attention.call
    maps = []
    for layer, query, key in seen:

        def project(x, head):
            return (
                np.einsum("BTD,DNd->BNTd", x.astype(np.float64), head.kernel.numpy())
                + head.bias.numpy()[None, :, None]
            )

        q, k = project(query, layer.query), project(key, layer.key)  # [1, N, S, d]
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(layer.head_size)  # [1, N, S, S]
        scores = np.where(mask, scores, -np.inf)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        maps.append((e / e.sum(-1, keepdims=True))[0][:, :real, :real])
    return np.stack(maps)


def numpy_kl(p, q):
    return (p * np.log(p / q)).sum(-1)


# The trigram embedding shows the last real token its right neighbour: the [PAD] embedding
# when padded, zeros when not. So the two inputs have different maps; each must match.
@pytest.mark.parametrize("seq_length", [None, SEQ])
def test_maps_and_kls_equal_an_independent_computation_with_padding_cut_off(models, seq_length):
    explorer = ae.AttentionExplorer(
        models[0], {"final": models[1]}, TOKENIZER, LAYER_MAP, seq_length
    )
    teacher = numpy_attention(models[0], SENTENCE, seq_length)
    student = numpy_attention(models[1], SENTENCE, seq_length)
    for layer in range(2):
        for head in range(4):
            view = explorer.view(SENTENCE, layer, head, "final")
            assert view["tokens"] == TOKENS
            want_t, want_s = teacher[LAYER_MAP[layer], head], student[layer, head]
            assert view["teacher_probs"].shape == view["student_probs"].shape == (7, 7)
            np.testing.assert_allclose(view["teacher_probs"], want_t, atol=1e-6)
            np.testing.assert_allclose(view["student_probs"], want_s, atol=1e-6)
            np.testing.assert_allclose(view["teacher_probs"].sum(-1), 1.0, atol=1e-6)
            np.testing.assert_allclose(view["student_probs"].sum(-1), 1.0, atol=1e-6)
            np.testing.assert_allclose(
                view["row_kl"], numpy_kl(want_t, want_s), rtol=1e-4, atol=1e-6
            )
    per_layer = [numpy_kl(teacher[t], student[k]).mean() for k, t in enumerate(LAYER_MAP)]
    np.testing.assert_allclose(view["layer_kl"], per_layer, rtol=1e-4, atol=1e-6)
    assert (view["layer"], view["teacher_layer"], view["head"]) == (1, 2, 3)


def test_the_reference_students_per_layer_kl_is_drawn_beside_the_snapshots(models):
    tf_keras.utils.set_random_seed(5)
    sharp = get_preset("tiny_student").replace(num_hidden_layers=2, initializer_range=1.0)
    untrained = build_pretrainer(sharp.replace(**SMALL))  # a KL unlike the snapshot's
    explorer = ae.AttentionExplorer(
        models[0], {"final": models[1]}, TOKENIZER, LAYER_MAP, reference=untrained
    )
    view = explorer.view(SENTENCE, 0, 0, "final")
    teacher = numpy_attention(models[0], SENTENCE)
    reference = numpy_attention(untrained, SENTENCE)
    reference = np.maximum(reference, ae.KL_FLOOR)  # the documented floor: some are 0
    want = [numpy_kl(teacher[t], reference[k]).mean() for k, t in enumerate(LAYER_MAP)]
    np.testing.assert_allclose(view["reference_layer_kl"], want, rtol=1e-4, atol=1e-6)
    assert view["reference_layer_kl"][0] > 2 * view["layer_kl"][0]
    fig = ae.draw(view)
    per_layer = fig.axes[-1]
    (lines,) = per_layer.collections  # one dashed segment per layer at its reference KL
    heights = [segment[0][1] for segment in lines.get_segments()]
    np.testing.assert_allclose(heights, want, rtol=1e-4, atol=1e-6)
    labels = [t.get_text() for t in per_layer.get_legend().get_texts()]
    assert labels == ["final", "untrained student"]  # the snapshot in the chosen colour
    plt.close(fig)


def test_padding_keys_get_no_probability_before_they_are_cut_off():
    tokens, batch = ae.encode_sentence(TOKENIZER, SENTENCE, SEQ)
    assert tokens == TOKENS and batch["input_word_ids"].shape == (1, SEQ)
    assert batch["input_mask"].numpy().tolist() == [[1] * 7 + [0] * 5]
    assert batch["input_word_ids"].numpy()[0, 7:].tolist() == [TOKENIZER.pad_id] * 5


def test_the_static_figure_has_three_maps_with_their_own_colour_bars(explorer):
    view, fig = explorer.update(SENTENCE, 1, 2, "final")
    titled = [ax for ax in fig.axes if ax.collections and ax.get_title()]
    maps = titled[:3]
    assert [ax.get_title() for ax in maps] == [
        "teacher · layer 2 · head 2",
        "student · layer 1 · head 2",
        "teacher − student",
    ]
    assert "final" in fig.get_suptitle() and "head 2" in fig.get_suptitle()
    values = [np.asarray(ax.collections[0].get_array()).reshape(7, 7) for ax in maps]
    np.testing.assert_allclose(values[2], view["teacher_probs"] - view["student_probs"], atol=1e-7)
    limits = [ax.collections[0].get_clim() for ax in maps]
    assert limits[0][1] == pytest.approx(view["teacher_probs"].max())
    assert limits[1][1] == pytest.approx(view["student_probs"].max())
    assert limits[2][0] == pytest.approx(-limits[2][1])  # centred at zero
    colour_bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(colour_bars) == 3
    labels = [t.get_text() for t in maps[0].get_xticklabels()]
    assert labels == TOKENS
    assert min(t.get_fontsize() for t in maps[0].get_xticklabels()) >= 9
    assert len(fig.axes) == 8  # + row-KL and per-layer bars
    assert ae.explore(explorer, SENTENCE, 1, 2, widgets=False).axes  # the static fallback


def test_the_widgets_call_the_explorer_on_every_change(explorer, monkeypatch):
    calls = []
    update = explorer.update
    monkeypatch.setattr(explorer, "update", lambda *a, **k: calls.append(k) or update(*a, **k))
    box = ae.explore(explorer, SENTENCE, widgets=True)
    text, (layer, head, snapshot), notes, message, image = (
        box.children[0],
        box.children[1].children,
        *box.children[2:],
    )
    first = bytes(image.value)
    assert first.startswith(b"\x89PNG") and message.value == notes.value == ""
    layer.value, head.value = 1, 3
    text.value = "a bad plot"
    assert calls[-1] == {"sentence": "a bad plot", "layer": 1, "head": 3, "snapshot": "final"}
    assert (layer.max, head.max, snapshot.options) == (1, 3, ("final",))
    assert bytes(image.value).startswith(b"\x89PNG") and bytes(image.value) != first
    shown = bytes(image.value)
    text.value = ""  # a bad choice: said, figure kept
    assert "sentence is empty" in message.value and bytes(image.value) == shown
    assert not ae.widgets_available()  # pytest: no Jupyter kernel


def test_an_unexpected_error_in_the_widgets_is_shown_with_its_type(explorer, monkeypatch):
    box = ae.explore(explorer, SENTENCE, widgets=True)
    text, message, image = box.children[0], box.children[3], box.children[4]
    shown = bytes(image.value)

    def broken(**_):
        raise RuntimeError("the snapshot's weights could not be read")

    monkeypatch.setattr(explorer, "update", broken)
    text.value = "another sentence"
    assert message.value == "<b>RuntimeError: the snapshot&#x27;s weights could not be read</b>"
    assert bytes(image.value) == shown


@pytest.mark.parametrize(
    "args, message",
    [
        (("", 0, 0, "final"), "sentence is empty"),
        (("   ", 0, 0, "final"), "sentence is empty"),
        ((SENTENCE, 2, 0, "final"), r"layer must be in 0\.\.1 \(the student has 2 layers\), got 2"),
        ((SENTENCE, -1, 0, "final"), r"layer must be in 0\.\.1"),
        ((SENTENCE, 0, 4, "final"), r"head must be in 0\.\.3 \(4 attention heads\), got 4"),
        ((SENTENCE, 0, 0, "after PD"), r"unknown snapshot 'after PD'; known: \['final'\]"),
        (("the film " * 6, 0, 0, "final"), "14 tokens with .* at most 12 fit"),
    ],
)
def test_bad_choices_say_what_is_wrong(explorer, args, message):
    with pytest.raises(ValueError, match=message):
        explorer.view(*args)


def test_a_layer_map_outside_the_teacher_is_refused(models):
    with pytest.raises(ValueError, match=r"0\.\.2 per student layer"):
        ae.AttentionExplorer(models[0], {"s": models[1]}, TOKENIZER, (1, 3))


# ------------------------------------------------------------- a fake run on disk
def _save_run(directory, experiment, seed):
    """A finished student model directory (with the vocabulary) and its experiment.yaml;
    returns the student's first query kernel."""
    tf_keras.utils.set_random_seed(seed)
    student = build_pretrainer(experiment.student.build_config())
    save_model_dir(student, directory, save_tokenizer=lambda d: save_tokenizer(TOKENIZER, d))
    save_yaml(experiment, os.path.join(directory, EXPERIMENT_FILE))
    return _query_kernel(student)


def _query_kernel(model):
    return block_variable(model, 0, "attention/query/kernel")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(root, kernels): root holds teacher/, pkt/ and no_at/ (attention transfer off), each
    with the init student, one checkpoint per layer-wise stage and the final student;
    kernels maps each expected snapshot name to its block-0 query kernel."""
    root = tmp_path_factory.mktemp("runs")
    experiment = tiny_distill_experiment()
    config = experiment.student.build_config()
    save_model_dir(build_pretrainer(experiment.teacher.build_config()), root / "teacher")
    stages = [
        s for s in plan_stages(experiment.distillation, config.num_hidden_layers) if s.layer_wise
    ]
    no_at = apply_overrides(experiment, "distillation.layer_wise.use_attention=false")
    kernels = {}
    for k, (label, directory, run_experiment) in enumerate(
        [("PKT", root / "pkt", experiment), ("no AT", root / "no_at", no_at)]
    ):
        kernels[f"{label}: after PD"] = _save_run(directory, run_experiment, seed=1 + k)
        for seed, (name, checkpoints) in enumerate(
            [(f"{label}: before stage layer_0", init_dir(directory))]
            + [
                (
                    f"{label}: after stage {s.name}",
                    os.path.join(stage_dir(directory, s), "checkpoints"),
                )
                for s in stages
            ],
            start=10 + 10 * k,
        ):
            tf_keras.utils.set_random_seed(seed)
            student = build_pretrainer(config)
            tf.train.Checkpoint(model=student).save(os.path.join(checkpoints, "ckpt"))
            kernels[name] = _query_kernel(student)
    return root, kernels


def test_a_progressive_run_gives_every_stage_snapshot_in_training_order(runs):
    root, kernels = runs
    explorer = ae.AttentionExplorer.from_runs(root / "teacher", root / "pkt", root / "no_at")
    assert list(explorer.snapshots) == [
        f"{label}: {when}"
        for label in ("PKT", "no AT")
        for when in (
            "before stage layer_0",
            "after stage layer_0",
            "before stage layer_1",
            "after stage layer_1",
            "after PD",
        )
    ]
    s = explorer.snapshots
    assert s["PKT: after stage layer_0"] is s["PKT: before stage layer_1"]
    assert s["no AT: after stage layer_0"] is s["no AT: before stage layer_1"]
    for name, kernel in kernels.items():
        np.testing.assert_array_equal(_query_kernel(s[name]), kernel, err_msg=name)
    assert len({float(k.sum()) for k in kernels.values()}) == len(kernels)  # all different
    assert (explorer.seq_length, explorer.layer_map) == (None, (0, 1))
    view = explorer.view("the film", 1, 0, "no AT: after PD")
    assert view["tokens"] == ["[CLS]", "the", "film", "[SEP]"] and view["layer_kl"].shape == (2,)


def test_an_unfinished_ablation_gives_a_note_not_its_snapshots(runs, tmp_path, capsys):
    root, kernels = runs
    shutil.copytree(root / "no_at", tmp_path / "no_at")
    for f in (tmp_path / "no_at").glob(ae.WEIGHTS_PREFIX + "*"):
        f.unlink()  # killed before its final student was saved
    for ablation in (tmp_path / "no_at", tmp_path / "never_ran"):
        explorer = ae.AttentionExplorer.from_runs(root / "teacher", root / "pkt", ablation)
        assert not [name for name in explorer.snapshots if name.startswith("no AT")]
        (note,) = explorer.notes
        assert ablation.name in note and "reproduce --steps ablation_pd_fmt" in note
        plt.close(ae.explore(explorer, "the film", widgets=False))
        assert note in capsys.readouterr().out
    reference = ae.AttentionExplorer.from_runs(root / "teacher", root / "pkt").reference
    np.testing.assert_array_equal(_query_kernel(reference), kernels["PKT: before stage layer_0"])


def test_missing_or_wrong_run_directories_are_named(runs, tmp_path):
    root = runs[0]
    with pytest.raises(FileNotFoundError, match="pkt_dir .*nowhere.* is not a directory"):
        ae.AttentionExplorer.from_runs(root / "teacher", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="trained with attention transfer"):
        ae.AttentionExplorer.from_runs(root / "teacher", root / "pkt", root / "pkt")
