"""mbert_lib.distill.analysis and mbert_lib.viz.transfer, against direct numpy computations."""

import matplotlib
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)
from mbert_lib.distill import analysis
from mbert_lib.train.progress import Scalars
from mbert_lib.viz import transfer as transfer_viz

matplotlib.use("Agg")

B, T, H, N = 3, 7, 16, 2


def features(seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(0.3, 2.0, (B, T, H)) * rng.uniform(0.5, 3.0, (B, T, 1))).astype(np.float32)


def input_mask():
    mask = np.ones((B, T), np.int32)
    mask[0, 5:] = 0
    mask[2, 3:] = 0
    return mask


def probabilities(seed, mask):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (B, N, T, T))
    logits = np.where(mask[:, None, None, :] > 0, logits, -np.inf)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def test_fmt_decomposition_matches_direct_mse_and_ignores_padding():
    t, s, mask = features(0), features(1), input_mask()
    real = mask.astype(bool)
    got = analysis.fmt_decomposition(t, s, mask)
    direct = ((t.astype(np.float64) - s)[real] ** 2).mean()
    assert got["paper_mse"] == pytest.approx(direct, rel=1e-12)
    assert got["sum_of_terms"] == pytest.approx(direct, rel=1e-9)
    level = ((t.astype(np.float64).mean(-1) - s.astype(np.float64).mean(-1))[real] ** 2).mean()
    assert got["mean_term"] == pytest.approx(level, rel=1e-9)
    s_padded = s.copy()
    s_padded[~real] = 1e3  # padding must not enter any term
    assert analysis.fmt_decomposition(t, s_padded, mask) == pytest.approx(got)


def test_feature_statistics_average_per_token_mean_and_std_over_real_tokens():
    out = {"encoder_outputs": np.stack([features(2), features(3)])}  # [L, B, T, H]
    mask = input_mask()
    stats = analysis.feature_statistics(out, mask)
    for layer in range(2):
        h = out["encoder_outputs"][layer][mask.astype(bool)]  # [tokens, H]
        assert stats.loc[layer, "mean"] == pytest.approx(h.mean(1).mean(), rel=1e-5)
        assert stats.loc[layer, "std"] == pytest.approx(h.std(1).mean(), rel=1e-5)


def test_attention_kl_per_head_is_numpy_kl_over_real_queries():
    mask = input_mask()
    p, q = probabilities(4, mask), probabilities(5, mask)
    b = 0
    got = analysis.attention_kl_per_head(p[b], q[b], mask[b])  # [N]
    real = mask[b].astype(bool)
    for head in range(N):
        pt, ps = p[b, head][real][:, real], q[b, head][real][:, real]  # [T', T']
        kl = (pt * (np.log(pt) - np.log(ps))).sum(-1).mean()
        assert got[head] == pytest.approx(kl, rel=1e-4)
    assert np.allclose(analysis.attention_kl_per_head(p[b], p[b], mask[b]), 0.0, atol=1e-6)


def test_stage_curves_put_stages_one_after_another(tmp_path):
    for stage, values in [("00_layer_0", {2: 5.0, 4: 3.0}), ("01_pd", {2: 1.0, 4: 0.5})]:
        scalars = Scalars(tmp_path / "tensorboard" / stage)
        for step, value in values.items():
            scalars.write("train", step, {"fmt" if stage != "01_pd" else "mlm_loss": value})
        scalars.flush()
    curves = analysis.stage_curves(tmp_path)
    pd_rows = curves[curves.stage == "01_pd"].sort_values("step")
    assert pd_rows.global_step.tolist() == [6, 8]  # offset by the first stage's 4 steps
    assert pd_rows.value.tolist() == pytest.approx([1.0, 0.5])
    with pytest.raises(FileNotFoundError, match="no TensorBoard logs"):
        analysis.stage_curves(tmp_path / "missing")


def test_layer_losses_plot_draws_one_line_per_layer_with_the_frame_values(tmp_path):
    frame = pd.DataFrame(
        {"initial": [0.5, 0.6], "after layer_0": [0.1, 0.6], "after layer_1": [0.12, 0.2]},
        index=[0, 1],
    )
    path = tmp_path / "losses.png"
    fig = transfer_viz.plot_layer_losses_by_snapshot({"AT": frame, "MSE": frame * 10}, path)
    assert path.exists() and path.stat().st_size > 0
    lines = fig.axes[1].get_lines()
    assert len(lines) == 2
    np.testing.assert_allclose(lines[0].get_ydata(), frame.loc[0].values * 10)


def test_paper_vs_ours_plots_differences_from_the_first_row_on_one_scale(tmp_path):
    frame = pd.DataFrame(
        {
            "paper": [83.0, 83.5, 83.9],
            "mlm": [40.1, 41.0, 40.5],
            "mlm_err": [0.4, 0.4, 0.4],
            "sst2": [80.0, np.nan, 82.0],
        },
        index=["AKT", "JKT", "PKT"],
    )
    fig = transfer_viz.plot_paper_vs_ours(
        [("Table 8", frame)],
        [("paper", "paper MNLI-m"), ("mlm", "ours MLM"), ("sst2", "ours SST-2")],
        tmp_path / "t8.png",
    )
    paper_ax, mlm_ax, sst2_ax = fig.axes[:3]
    np.testing.assert_allclose(mlm_ax.get_lines()[1].get_xdata(), [0.0, 0.9, 0.4], atol=1e-9)
    np.testing.assert_allclose(paper_ax.get_lines()[1].get_xdata(), [0.0, 0.5, 0.9], atol=1e-9)
    assert paper_ax.get_xlim() == mlm_ax.get_xlim() == sst2_ax.get_xlim()  # one scale
    lo, hi = mlm_ax.get_xlim()
    assert lo < -0.4 and hi > 0.9 + 0.4  # error bars in view
    assert [t.get_text() for t in paper_ax.get_yticklabels()] == ["AKT", "JKT", "PKT"]
    assert "minus AKT (points)" in sst2_ax.get_xlabel()
    assert (tmp_path / "t8.png").stat().st_size > 0


def test_weight_norms_read_each_blocks_variable_and_name_missing_ones():
    from mbert_lib.config import get_preset
    from mbert_lib.models import build_pretrainer

    config = get_preset("tiny_student").replace(vocab_size=64, num_hidden_layers=2)
    model = build_pretrainer(config)
    query = [v for v in model.encoder.weights if "layer_1/attention/query/kernel" in v.name][0]
    query.assign(tf.ones_like(query) * 0.5)
    frame = analysis.weight_norms({"a": model}, ["attention/query/kernel"], [0, 1])
    assert frame.loc[(1, "attention/query/kernel"), "a"] == pytest.approx(
        0.5 * np.sqrt(np.prod(query.shape)), rel=1e-6
    )
    assert (
        frame.loc[(0, "attention/query/kernel"), "a"]
        != frame.loc[(1, "attention/query/kernel"), "a"]
    )
    with pytest.raises(KeyError, match="layer_5/attention/query/kernel"):
        analysis.weight_norms({"a": model}, ["attention/query/kernel"], [5])


def test_attention_sharpness_is_one_for_one_hot_rows_and_one_over_t_for_uniform():
    mask = input_mask()
    uniform = np.where(mask[:, None, None, :] > 0, 1.0, 0.0) * np.ones((B, N, T, T))
    uniform = uniform / uniform.sum(-1, keepdims=True)
    one_hot = np.broadcast_to(np.eye(T), (B, N, T, T))
    got = analysis.attention_sharpness(np.stack([uniform, one_hot]), mask)
    lengths = mask.sum(1)  # example b has lengths[b] rows of max 1/lengths[b]
    assert got[0] == pytest.approx(B / lengths.sum())
    assert got[1] == pytest.approx(1.0)


def test_learning_rate_budget_sums_each_blocks_rates_over_the_stages():
    from mbert_lib.config_tree import apply_overrides
    from mbert_lib.distill.plan import plan_stages
    from mbert_lib.experiment.distill import DistillExperiment

    base = (
        "distillation.layer_wise.steps=10,distillation.layer_wise.learning_rate.peak=0.01,"
        "distillation.layer_wise.learning_rate.end=0.01,"
        "distillation.layer_wise.lower_lr_multiplier=0.1,distillation.pretrain.steps=20,"
        "distillation.pretrain.learning_rate.peak=0.02,"
        "distillation.pretrain.learning_rate.warmup_steps=4"
    )
    pd_sum = sum(0.02 * t / 4 if t < 4 else 0.02 * (1 - t / 20) for t in range(20))
    pkt = apply_overrides(DistillExperiment(), base + ",distillation.strategy=progressive")
    got = analysis.learning_rate_budget(plan_stages(pkt.distillation, 3), 3)
    # block 0: its own stage (10 × 0.01) + two later stages at 0.1×; block 2: its own only
    np.testing.assert_allclose(got["layer-wise"], [0.1 + 2 * 0.01, 0.1 + 0.01, 0.1], rtol=1e-5)
    np.testing.assert_allclose(got["PD only"], [pd_sum] * 3, rtol=1e-5)
    akt = apply_overrides(DistillExperiment(), base + ",distillation.strategy=auxiliary")
    got = analysis.learning_rate_budget(plan_stages(akt.distillation, 3), 3)
    aux_sum = sum(0.02 * t / 4 if t < 4 else 0.02 * (1 - t / 50) for t in range(50))
    np.testing.assert_allclose(got["layer-wise"], [aux_sum] * 3, rtol=1e-5)
    np.testing.assert_allclose(got["PD only"], [0.0] * 3)


def _rows(rng, shape):
    x = rng.random(shape) ** 4  # peaked rows
    return x / x.sum(-1, keepdims=True)


def test_attention_distances_against_scipy_on_the_real_rows():
    rng = np.random.default_rng(0)
    p, q = _rows(rng, (2, 3, 5, 5)), _rows(rng, (2, 3, 5, 5))
    q[0, 0, 0] = [1.0, 0, 0, 0, 0]  # exact zeros: JS and TV stay finite
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
    real = [(b, n, i) for b in range(2) for n in range(3) for i in range(5) if mask[b, i]]
    js = np.mean([jensenshannon(p[r], q[r]) ** 2 for r in real])
    tv = np.mean([0.5 * np.abs(p[r] - q[r]).sum() for r in real])
    kl = np.mean([entropy(p[r], np.maximum(q[r], 1e-9)) for r in real])
    assert analysis.attention_distance(p, q, mask, "js") == pytest.approx(js, rel=1e-9)
    assert analysis.attention_distance(p, q, mask, "tv") == pytest.approx(tv, rel=1e-9)
    assert analysis.attention_distance(p, q, mask, "kl") == pytest.approx(kl, rel=1e-9)
    assert analysis.attention_distance(p, p, mask, "js") == pytest.approx(0.0, abs=1e-12)
    disjoint_p, disjoint_q = np.eye(5)[None, None], np.roll(np.eye(5), 1, -1)[None, None]
    assert analysis.attention_distance(disjoint_p, disjoint_q, np.ones((1, 5)), "js") == (
        pytest.approx(np.log(2))
    )
    with pytest.raises(ValueError, match="one of"):
        analysis.attention_distance(p, q, mask, "hellinger")
