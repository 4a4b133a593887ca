"""The per-layer transfer summary (transfer.json) against direct numpy computations."""

import numpy as np
import pytest

from mbert_lib.distill import transfer_summary
from tests.test_distill_analysis import B, N, T, features, input_mask, probabilities


def numpy_kl(p, q, mask):
    """Mean over heads and real query rows of Σ_keys p log(p / q); p, q [B, N, T, T]."""
    safe = np.where(p > 0, p, 1.0)
    kl = (p * (np.log(safe) - np.log(np.where(p > 0, q, 1.0)))).sum(-1)  # [B, N, T]
    rows = np.broadcast_to(mask[:, None, :].astype(bool), kl.shape)
    return kl[rows].mean()


def outputs(hidden, probs):
    return {"encoder_outputs": np.stack(hidden), "attention_scores": np.stack(probs)}


MASK = input_mask()
TEACHER = outputs([features(0), features(1)], [probabilities(2, MASK), probabilities(3, MASK)])
RANDOM = outputs([features(4), features(5)], [probabilities(6, MASK), probabilities(7, MASK)])


def mixed(from_teacher):
    """A student whose layer k is the teacher's where from_teacher[k], random elsewhere."""
    pick = [TEACHER if f else RANDOM for f in from_teacher]
    return {key: np.stack([pick[k][key][k] for k in range(2)]) for key in TEACHER}


def test_each_layer_is_measured_around_its_own_stage():
    snapshots = [mixed([False, False]), mixed([True, False]), mixed([True, True])]
    rows = transfer_summary.layer_summary(TEACHER, snapshots, snapshots[-1], MASK, (0, 1))
    real = MASK.astype(bool)
    for k, row in enumerate(rows):
        before = snapshots[k]
        assert row["at_before"] == pytest.approx(
            numpy_kl(TEACHER["attention_scores"][k], before["attention_scores"][k], MASK), rel=1e-4
        )
        assert row["at_after"] == pytest.approx(0.0, abs=1e-6)
        diff = TEACHER["encoder_outputs"][k] - before["encoder_outputs"][k]
        assert row["mse_before"] == pytest.approx((diff[real] ** 2).mean(), rel=1e-5)
        assert row["mse_after"] == pytest.approx(0.0, abs=1e-9)
        assert row["spread_after"] == pytest.approx(row["spread_teacher"], rel=1e-6)
        largest = TEACHER["attention_scores"][k].max(-1)  # [B, N, T]
        assert row["max_prob_after"] == pytest.approx(
            largest[np.broadcast_to(real[:, None, :], largest.shape)].mean(), rel=1e-5
        )
        assert row["max_prob_teacher"] == pytest.approx(row["max_prob_after"], rel=1e-6)
    assert rows[0]["max_prob_uniform"] == pytest.approx(B / MASK.sum())
    summary = {"layers": rows, "ablation_at_kl": {"with_at": 0.1, "without_at": 0.15}}
    got = transfer_summary.targets(summary)
    assert got["at_halves"] and got["mse_halves"] and got["spread_toward_teacher"]
    assert not got["ablation_2x"]  # 1.5x is not 2x


def test_a_stage_that_changed_nothing_misses_the_targets():
    same = mixed([False, False])
    rows = transfer_summary.layer_summary(TEACHER, [same, same, same], same, MASK, (0, 1))
    assert all(r["at_after"] == pytest.approx(r["at_before"]) for r in rows)
    for k, row in enumerate(rows):  # the teacher's own sharpness, not the student's
        largest = TEACHER["attention_scores"][k].max(-1)  # [B, N, T]
        real = np.broadcast_to(MASK.astype(bool)[:, None, :], largest.shape)
        assert row["max_prob_teacher"] == pytest.approx(largest[real].mean(), rel=1e-5)
        assert row["max_prob_teacher"] != pytest.approx(row["max_prob_after"], rel=1e-3)
    got = transfer_summary.targets({"layers": rows})
    assert not got["at_halves"] and not got["mse_halves"] and "ablation_2x" not in got


def test_uniform_attention_rows_sum_to_one_over_real_keys():
    u = transfer_summary.uniform_attention(MASK, N)[0]  # [B, N, T, T]
    np.testing.assert_allclose(u.sum(-1), 1.0)
    assert np.all(u[:, :, :, ~MASK[0].astype(bool)][0] == 0)
    assert u.shape == (B, N, T, T)


def test_the_ablation_kl_is_finite_when_a_student_probability_underflows_to_zero():
    student = {k: v.copy() for k, v in RANDOM.items()}
    expected = np.mean(
        [
            numpy_kl(TEACHER["attention_scores"][k], RANDOM["attention_scores"][k], MASK)
            for k in range(2)
        ]
    )
    got = transfer_summary.mean_attention_kl(TEACHER, student, MASK, (0, 1))
    assert got == pytest.approx(expected, rel=1e-5)  # no zero: the exact KL
    student["attention_scores"][0][0, 0, 0, 0] = 0.0  # one real key underflows
    with np.errstate(divide="ignore"):
        assert np.isinf(
            numpy_kl(TEACHER["attention_scores"][0], student["attention_scores"][0], MASK)
        )
    floored = transfer_summary.mean_attention_kl(TEACHER, student, MASK, (0, 1))
    assert np.isfinite(floored) and floored > got
