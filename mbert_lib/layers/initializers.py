"""Weight initialisation: truncated normal with stddev `initializer_range` (as BERT)."""

import tf_keras


def truncated_normal(stddev: float) -> tf_keras.initializers.Initializer:
    """A fresh initializer per weight.

    Never share one unseeded Keras initializer between weights: tf-keras then
    returns identical values for every weight of the same shape.
    """
    return tf_keras.initializers.TruncatedNormal(stddev=stddev)
