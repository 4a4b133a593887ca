"""TensorFlow's start-up notices, kept out of notebooks and logs.

TensorFlow writes its start-up notices (oneDNN custom operations, the CUDA
stub, the CPU features it was built for, "failed call to cuInit" on machines
without a GPU) from C++ before absl logging is initialised, so
TF_CPP_MIN_LOG_LEVEL does not reach them, and ipykernel forwards the
process's stderr into the first cell of every notebook.
`quiet_tensorflow_import()` (called when mbert_lib is imported) puts a finder on
`sys.meta_path` so that the process's first `import tensorflow`, by whichever
module, runs with file descriptor 2 pointed at /dev/null and lists the devices
(the CUDA probe) before restoring it: every later warning and error prints as
usual, and an exception raised by the import itself still propagates with its
traceback. MBERT_TF_STARTUP_LOGS=1 keeps the notices.
"""

import contextlib
import importlib.abc
import importlib.machinery
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


class _QuietLoader(importlib.abc.Loader):
    """TensorFlow's own loader, run with fd 2 silenced, then its devices listed."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        with native_stderr_silenced():
            self._loader.exec_module(module)
            module.config.list_physical_devices()  # the CUDA probe ("failed call to cuInit")

    def __getattr__(self, name):  # resource readers and the rest: the real loader's
        return getattr(self._loader, name)


class QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` the usual way, once, and hands it to `_QuietLoader`."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_tensorflow_import() -> None:
    """Makes the first `import tensorflow` of the process quiet, whichever module does it.

    Importing mbert_lib calls this and imports nothing heavy itself, so `--help` and
    reading an experiment yaml never load TensorFlow.
    """
    if "tensorflow" in sys.modules or os.environ.get("MBERT_TF_STARTUP_LOGS") == "1":
        return
    if not any(isinstance(f, QuietTensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, QuietTensorFlowFinder())
