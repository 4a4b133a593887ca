"""Importing mbert_lib in a fresh process prints none of TensorFlow's start-up notices."""

import os
import subprocess
import sys

from mbert_lib.runtime import REPO_ROOT

NOTICES = (
    "oneDNN custom operations",
    "absl::InitializeLog",
    "cuda drivers",
    "cuInit",
    "cpu_feature_guard",
)


def _stderr_of(code: str, **env) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_import_and_first_op_are_quiet_but_later_stderr_is_not():
    err = _stderr_of(
        "import sys, mbert_lib, tensorflow as tf; tf.constant(1) + 1; "
        "print('after', file=sys.stderr); sys.stderr.flush(); "
        "import os; os.write(2, b'c-level\\n')"
    )
    assert not [n for n in NOTICES if n in err], err
    assert "after" in err and "c-level" in err  # fd 2 was restored


def test_the_notices_can_be_kept():
    err = _stderr_of(
        "import mbert_lib, tensorflow as tf; tf.constant(1) + 1", MBERT_TF_STARTUP_LOGS="1"
    )
    assert any(n in err for n in NOTICES), err


def test_native_stderr_is_silenced_only_inside_the_block(capfd):
    from mbert_lib.quiet_start import native_stderr_silenced

    with native_stderr_silenced():
        os.write(2, b"inside\n")
    os.write(2, b"outside\n")
    assert capfd.readouterr().err == "outside\n"


def test_help_and_reading_every_experiment_yaml_do_not_load_tensorflow():
    """`--help` of every command and the yaml schemas stay fast: no TensorFlow import."""
    err = _stderr_of(
        "import glob, sys\n"
        "from mbert_lib.cli import build_parser\n"
        "from mbert_lib.experiment.distill import load_distill_experiment\n"
        "from mbert_lib.experiment import load_experiment\n"
        "from mbert_lib.experiment.finetune import FinetuneExperiment\n"
        "build_parser()\n"
        "for path in sorted(glob.glob('experiments/*.yaml')):\n"
        "    if '/distill_' in path:\n"
        "        load_distill_experiment(path)\n"
        "    elif '/finetune_' in path:\n"
        "        load_experiment(path, cls=FinetuneExperiment)\n"
        "    else:\n"
        "        load_experiment(path)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tf_keras'))\n"
        "print('loaded:', loaded[:5], file=sys.stderr)\n"
    )
    assert "loaded: []" in err, err
