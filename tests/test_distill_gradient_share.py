"""Term gradients of a layer-wise stage add up to the gradient of its loss; shares and
clipping as defined."""

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.distill import gradient_share
from mbert_lib.distill.objective import DistillationObjective
from mbert_lib.distill.plan import stage_variables
from tests.test_distill_objective import batch, counts, setup  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it


def test_term_gradients_sum_to_the_loss_gradient_and_shares_are_consistent(batch):  # noqa: F811
    exp, teacher, student, plan = setup("distillation.layer_wise.attention_weight=3.0")
    stage = plan[1]
    objective = DistillationObjective(
        teacher,
        student,
        stage,
        (0, 1, 3),
        exp.distillation.layer_wise,
        exp.distillation.pretrain,
        student_dropout=False,
    )
    trained = [v for vs in stage_variables(student, stage).values() for v in vs]
    terms = gradient_share.term_gradients(objective, batch, trained)
    with tf.GradientTape() as tape:
        loss, _ = objective.loss(batch, counts(batch), training=True)
    wholes = [tf.convert_to_tensor(g) for g in tape.gradient(loss, trained)]
    for v, whole, g_fmt, g_at in zip(trained, wholes, terms["fmt"], terms["at"]):
        np.testing.assert_allclose(g_fmt + g_at, whole, rtol=1e-4, atol=1e-7, err_msg=v.name)
    shares = gradient_share.gradient_shares(objective, batch, clipnorm=1e-3)
    names = {v.name for v in gradient_share.score_variables(student, 1)}
    assert set(shares.index) == names and len(names) >= 4  # kernels and biases
    total = np.sqrt(
        sum(float(tf.reduce_sum(tf.square(a + b))) for a, b in zip(terms["fmt"], terms["at"]))
    )
    assert shares.attrs["global_norm"] == np.float64(total) or np.isclose(
        shares.attrs["global_norm"], total, rtol=1e-5
    )
    assert np.isclose(shares.attrs["clip_scale"], 1e-3 / total)
    np.testing.assert_allclose(shares["|g_AT| clipped"], shares["|g_AT|"] * 1e-3 / total)
    np.testing.assert_allclose(
        shares["AT share"], shares["|g_AT|"] / (shares["|g_AT|"] + shares["|g_FMT|"])
    )
    assert ((shares["AT share"] > 0) & (shares["AT share"] < 1)).all()
