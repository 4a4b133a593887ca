"""Every test starts from the same python / numpy / TF seeds, so a failure reproduces."""

import pytest
import tf_keras

import mbert_lib  # noqa: F401  (selects tf-keras before TF is imported)


@pytest.fixture(autouse=True)
def _seeded():
    tf_keras.utils.set_random_seed(1234)
    yield
