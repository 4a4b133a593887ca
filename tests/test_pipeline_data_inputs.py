"""The data step's fingerprint follows the data it reads, not only its settings."""

import shutil

from mbert_lib.pipeline import STEPS, get_recipe
from mbert_lib.pipeline.core import Context, step_fingerprints
from mbert_lib.pipeline.teacher_choice import choose_teacher

SETTINGS = choose_teacher(get_recipe("smoke"), "trained")


def _tree(root, review="a fine film\t1\n"):
    (root / "wikitext-2").mkdir(parents=True)
    (root / "wikitext-2" / "valid.txt").write_text(" = A = \n one line .\n")
    (root / "glue" / "SST-2").mkdir(parents=True)
    (root / "glue" / "SST-2" / "train.tsv").write_text("sentence\tlabel\n" + review)
    return root


def _prints(tmp_path, data_dir):
    return step_fingerprints(STEPS, Context(tmp_path / "out", SETTINGS, data_dir=data_dir))


def test_other_data_files_give_the_data_step_and_its_readers_other_fingerprints(tmp_path):
    one = _tree(tmp_path / "one")
    builtin, local = _prints(tmp_path, None), _prints(tmp_path, str(one))
    assert builtin["data"] != local["data"]  # the source
    (one / "glue" / "SST-2" / "train.tsv").write_text("sentence\tlabel\na dull film\t0\n")
    edited = _prints(tmp_path, str(one))
    for step in ("data", "teacher", "pkt", "label_budget"):
        assert edited[step] != local[step], step  # a changed file re-runs what read it
    moved = shutil.copytree(one, tmp_path / "elsewhere")
    assert _prints(tmp_path, str(moved)) == edited  # the same files elsewhere: the same data
