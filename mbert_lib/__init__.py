"""mbert_lib: MobileBERT (Sun et al., ACL 2020), step by step, on TensorFlow 2 + tf-keras."""

import os as _os

# tf-keras (Keras 2) everywhere, as tensorflow/models does; never Keras 3.
_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from mbert_lib.quiet_start import import_tensorflow as _import_tensorflow  # noqa: E402

_import_tensorflow()

from mbert_lib.config import PRESETS, MobileBertConfig, get_preset  # noqa: E402
from mbert_lib.models import (  # noqa: E402
    BertEncoder,
    Classifier,
    MobileBertEncoder,
    Pretrainer,
    build_classifier,
    build_encoder,
    build_pretrainer,
    count_params,
)

__all__ = [
    "PRESETS",
    "MobileBertConfig",
    "get_preset",
    "BertEncoder",
    "Classifier",
    "MobileBertEncoder",
    "Pretrainer",
    "build_classifier",
    "build_encoder",
    "build_pretrainer",
    "count_params",
]
