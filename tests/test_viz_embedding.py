"""mbert_lib.viz.embedding: the trigram window map read off `trigram_concat`."""

import numpy as np
import pytest

from mbert_lib.viz.embedding import trigram_sources


def test_window_map_against_the_definition():
    T = 5
    sources = trigram_sources(T)
    expected = np.full((T, T + 2), -1)
    for t in range(T):
        # Column j holds input position j − 1 (column 0 and T + 1: the zero vectors).
        expected[t, t + 2] = 0  # e_{t+1}
        expected[t, t + 1] = 1  # e_t
        expected[t, t] = 2  # e_{t−1}
    np.testing.assert_array_equal(sources, expected)


def test_single_token_sees_zeros_on_both_sides():
    np.testing.assert_array_equal(trigram_sources(1), [[2, 1, 0]])
    with pytest.raises(ValueError, match="seq_length"):
        trigram_sources(0)
