"""Every test starts from the same python / numpy / TF seeds, so a failure reproduces."""

import pytest

# isort: off
import mbert_lib  # noqa: F401  (first: selects tf-keras before TF is imported)
import tf_keras

# isort: on


@pytest.fixture(autouse=True)
def _seeded():
    tf_keras.utils.set_random_seed(1234)
    yield
