"""mbert_lib: MobileBERT (Sun et al., ACL 2020), step by step, on TensorFlow 2 + tf-keras.

Importing the package loads nothing heavy: TensorFlow arrives with the first module
that needs it (quietly, see `quiet_start`), so `python -m mbert_lib --help` and
validating an experiment yaml stay fast. The names below load their module on use.
"""

import importlib as _importlib
import os as _os

# tf-keras (Keras 2) everywhere, as tensorflow/models does; never Keras 3.
_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from mbert_lib.quiet_start import quiet_tensorflow_import as _quiet_tensorflow_import  # noqa: E402

_quiet_tensorflow_import()

_EXPORTS = {
    "PRESETS": "mbert_lib.config",
    "MobileBertConfig": "mbert_lib.config",
    "get_preset": "mbert_lib.config",
    "BertEncoder": "mbert_lib.models",
    "Classifier": "mbert_lib.models",
    "MobileBertEncoder": "mbert_lib.models",
    "Pretrainer": "mbert_lib.models",
    "build_classifier": "mbert_lib.models",
    "build_encoder": "mbert_lib.models",
    "build_pretrainer": "mbert_lib.models",
    "count_params": "mbert_lib.models",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(_importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mbert_lib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
