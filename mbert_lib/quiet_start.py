"""TensorFlow's start-up notices, kept out of notebooks and logs.

TensorFlow writes its start-up notices (oneDNN custom operations, the CUDA
stub, the CPU features it was built for, "failed call to cuInit" on machines
without a GPU) from C++ before absl logging is initialised, so
TF_CPP_MIN_LOG_LEVEL does not reach them, and ipykernel forwards the
process's stderr into the first cell of every notebook. `import_tensorflow()`
imports TensorFlow and lists its devices (which runs the CUDA probe) with
file descriptor 2 pointed at /dev/null, then restores it: every later
warning and error prints as usual, and an exception raised by the import
itself still propagates with its traceback. MBERT_TF_STARTUP_LOGS=1 keeps
the notices.
"""

import contextlib
import os
import sys


@contextlib.contextmanager
def native_stderr_silenced():
    """File descriptor 2 pointed at /dev/null for the block, then restored. C++ notices of
    TensorFlow, the TFLite converter and the LiteRT interpreter ("Created TensorFlow Lite
    XNNPACK delegate", "fully_quantize: 0, ...", oneDNN's "supports DT_INT64 only")
    bypass Python's sys.stderr; exceptions still show, they travel through Python."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 (a detached process): nothing to hide
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def import_tensorflow():
    """The tensorflow module, imported (once) without its C++ start-up notices."""
    if "tensorflow" in sys.modules or os.environ.get("MBERT_TF_STARTUP_LOGS") == "1":
        import tensorflow as tf

        return tf
    with native_stderr_silenced():
        import tensorflow as tf

        tf.config.list_physical_devices()
    return tf
