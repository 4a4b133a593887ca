"""The attention grid: one colour scale per panel, and the difference column is a − b."""

import matplotlib
import numpy as np

from mbert_lib.viz import transfer as transfer_viz

matplotlib.use("Agg")


def test_panels_have_their_own_scale_and_the_difference_column_is_a_minus_b():
    rng = np.random.default_rng(0)
    sharp = np.eye(5) * 0.9 + 0.02  # [T, T]
    flat = np.full((5, 5), 0.2) + rng.normal(0, 1e-3, (5, 5))
    rows = [{"label": "layer 0", "maps": [("teacher", sharp), ("student", flat)]}]
    fig = transfer_viz.plot_attention_grid(rows, list("abcde"), difference=(0, 1))
    heat = [ax for ax in fig.axes if ax.get_title()]  # not the colour bars
    assert [ax.get_title() for ax in heat] == ["teacher", "student", "teacher − student"]
    values = [np.asarray(ax.collections[0].get_array()).reshape(5, 5) for ax in heat]
    np.testing.assert_allclose(values[2], sharp - flat)
    limits = [ax.collections[0].get_clim() for ax in heat]
    assert limits[0] == (0.0, sharp.max()) and limits[1] == (0.0, flat.max())  # own scales
    bound = np.abs(sharp - flat).max()
    assert np.allclose(limits[2], (-bound, bound))  # centred at zero
    assert len(fig.axes) == 6  # a colour bar per panel
