"""The NoNorm-imitation figure's titles state the channel's and the overall unexplained share."""

import numpy as np
import pandas as pd

from mbert_lib.viz.norms import plot_nonorm_imitation


def test_title_gives_the_channel_and_the_all_channel_unexplained_fraction():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(200, 4))
    y_hat = y + rng.normal(scale=[[0.1, 0.5, 1.0, 2.0]], size=(200, 4))
    sweep = pd.DataFrame({"spread": [0, 1], "unexplained": [0.0, 0.5], "varies": ["scale"] * 2})
    fig = plot_nonorm_imitation(y, y_hat, 3, sweep)
    channel = np.sum((y[:, 3] - y_hat[:, 3]) ** 2) / np.sum((y[:, 3] - y[:, 3].mean()) ** 2)
    overall = np.sum((y - y_hat) ** 2) / np.sum((y - y.mean(axis=0)) ** 2)
    title = fig.axes[0].get_title()
    assert f"leave {channel:.0%} of its variance" in title
    assert f"({overall:.1%} over all channels)" in title
