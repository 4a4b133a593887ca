"""Warmup + polynomial decay against its closed form."""

import pytest
import tf_keras

from mbert_lib.optim import WarmupPolynomialDecay


def closed_form(step, peak, end, warmup, total, power):
    if step < warmup:
        return peak * step / warmup
    done = min(step, total) / total
    return (peak - end) * (1 - done) ** power + end


@pytest.mark.parametrize("power", [1.0, 2.0, 0.5])
def test_matches_closed_form(power):
    peak, end, warmup, total = 1.5e-3, 1.5e-7, 100, 1000
    schedule = WarmupPolynomialDecay(peak, total, warmup, end, power)
    for step in [0, 1, 50, 99, 100, 101, 400, 999, 1000, 5000]:
        want = closed_form(step, peak, end, warmup, total, power)
        # float32 arithmetic: 1 − 999/1000 loses ~1e-5 relative.
        assert float(schedule(step)) == pytest.approx(want, rel=1e-4, abs=1e-12), step


def test_landmarks_of_the_paper_schedule():
    schedule = WarmupPolynomialDecay(1.5e-3, 500_000, 10_000, 1.5e-7)
    assert float(schedule(0)) == 0.0
    assert float(schedule(5_000)) == pytest.approx(0.75e-3, rel=1e-6)
    assert float(schedule(9_999)) == pytest.approx(1.5e-3 * 9_999 / 10_000, rel=1e-6)
    # At the end of warmup the decay counted from step 0 takes over (BERT / TF1).
    assert float(schedule(10_000)) == pytest.approx((1.5e-3 - 1.5e-7) * 0.98 + 1.5e-7, rel=1e-6)
    assert float(schedule(500_000)) == pytest.approx(1.5e-7, rel=1e-4)
    assert float(schedule(900_000)) == pytest.approx(1.5e-7, rel=1e-4)


def test_no_warmup_starts_at_peak():
    schedule = WarmupPolynomialDecay(1e-3, 10, warmup_steps=0)
    assert float(schedule(0)) == pytest.approx(1e-3)
    assert float(schedule(5)) == pytest.approx(5e-4)


def test_serialization_round_trip():
    schedule = WarmupPolynomialDecay(2e-3, 300, 30, 1e-6, 1.5)
    restored = tf_keras.optimizers.schedules.deserialize(
        tf_keras.optimizers.schedules.serialize(schedule)
    )
    assert isinstance(restored, WarmupPolynomialDecay)
    assert restored.get_config() == schedule.get_config()
    assert float(restored(123)) == pytest.approx(float(schedule(123)))


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(peak_learning_rate=0.0, decay_steps=10), "peak_learning_rate"),
        (dict(peak_learning_rate=1e-3, decay_steps=0), "decay_steps"),
        (dict(peak_learning_rate=1e-3, decay_steps=10, warmup_steps=11), "warmup_steps"),
        (
            dict(peak_learning_rate=1e-3, decay_steps=10, end_learning_rate=1e-2),
            "end_learning_rate",
        ),
    ],
)
def test_bad_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        WarmupPolynomialDecay(**kwargs)
