"""Activation functions by their `hidden_act` name (config.ACTIVATIONS)."""

import tensorflow as tf

_ACTIVATIONS = {
    "relu": tf.nn.relu,
    "relu6": tf.nn.relu6,
    # Exact erf GELU, as tf-models and Hugging Face use for "gelu".
    "gelu": lambda x: tf.nn.gelu(x, approximate=False),
    # The tanh approximation of the original BERT / MobileBERT TF1 code.
    "gelu_new": lambda x: tf.nn.gelu(x, approximate=True),
    "tanh": tf.math.tanh,
    "swish": tf.nn.silu,
    "linear": tf.identity,
}


def get_activation(name: str):
    """The function for a `hidden_act` name; the error lists the known names."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}"
        ) from None
