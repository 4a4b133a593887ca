"""The shipped teacher's packing: float16 round trip, the record's checks, the refusals."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.checkpoints import load_pretrainer
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer, save_tokenizer
from mbert_lib.train import shipped_teacher as shipped
from tests.distill_fixtures import make_teacher_dir
from tests.train_fixtures import VOCAB

RECORD = {
    "command": "test",
    "data": {"train_document_ids": shipped.document_ids([["a b c ."], ["d e ."]])},
}


def _tokenizer(offset: int = 0) -> WordPieceTokenizer:
    words = [f"w{i + offset}" for i in range(VOCAB - len(SPECIAL_TOKENS))]
    return WordPieceTokenizer(["[PAD]", *[t for t in SPECIAL_TOKENS if t != "[PAD]"], *words])


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    root = tmp_path_factory.mktemp("shipped")
    model_dir = make_teacher_dir(root / "trained")
    save_tokenizer(_tokenizer(), model_dir)
    written = shipped.pack_teacher(model_dir, root / "teacher", RECORD)
    return Path(model_dir), root / "teacher", written


def _checkpoint_values(prefix: str) -> dict:
    reader = tf.train.load_checkpoint(prefix)
    return {
        k: reader.get_tensor(k)
        for k in reader.get_variable_to_shape_map()
        if k != "_CHECKPOINTABLE_OBJECT_GRAPH"
    }


def test_installed_teacher_holds_every_weight_rounded_to_float16(packed, tmp_path):
    trained, teacher_dir, written = packed
    record = shipped.install_teacher(teacher_dir, tmp_path / "installed")
    assert record == written and record["tokenizer"]["vocab_size"] == VOCAB
    before = _checkpoint_values(str(trained / "model.ckpt"))
    after = _checkpoint_values(str(tmp_path / "installed" / "model.ckpt"))
    assert sorted(before) == sorted(after) and len(before) > 10
    for key, value in before.items():
        assert after[key].dtype == np.float32
        np.testing.assert_array_equal(after[key], value.astype(np.float16).astype(np.float32))
    # and the model the library builds from it computes with those weights
    model = load_pretrainer(tmp_path / "installed")
    assert model.encoder.embedding.word_embeddings.embeddings.numpy().dtype == np.float32
    assert (tmp_path / "installed" / shipped.INSTALLED_RECORD).is_file()


def test_record_lists_each_file_with_its_size_and_sha256(packed):
    _, teacher_dir, written = packed
    assert set(written["files"]) == {
        "bert_config.json",
        "model.safetensors",
        "vocab.txt",
        "tokenizer_config.json",
    }
    on_disk = json.loads((teacher_dir / "teacher.json").read_text())
    assert on_disk == written
    size = (teacher_dir / "model.safetensors").stat().st_size
    assert written["files"]["model.safetensors"]["bytes"] == size


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "model.safetensors").unlink(), r"model\.safetensors is missing"),
        (
            lambda d: (d / "model.safetensors").write_bytes(
                (d / "model.safetensors").read_bytes()[:1000]
            ),
            r"1,000 bytes, expected .*truncated",
        ),
        (
            lambda d: (d / "vocab.txt").write_text(
                (d / "vocab.txt").read_text().replace("w1\n", "w9\n")
            ),
            r"vocab\.txt: its sha256 differs",
        ),
        (lambda d: (d / "teacher.json").write_text("{"), r"teacher\.json: not valid JSON"),
        (lambda d: (d / "teacher.json").unlink(), r"is not a shipped teacher"),
    ],
)
def test_a_damaged_teacher_is_refused_naming_the_file_and_nothing_is_written(
    packed, tmp_path, damage, message
):
    _, teacher_dir, _ = packed
    copy = tmp_path / "teacher"
    shutil.copytree(teacher_dir, copy)
    damage(copy)
    with pytest.raises(shipped.ShippedTeacherError, match=message):
        shipped.install_teacher(copy, tmp_path / "installed")
    assert not (tmp_path / "installed").exists()


def test_a_run_with_another_vocabulary_is_refused(packed, tmp_path):
    _, teacher_dir, written = packed
    shipped.check_vocabulary(written, teacher_dir / "vocab.txt", "the run's tokenizer")
    other = save_tokenizer(_tokenizer(offset=1), tmp_path)
    with pytest.raises(shipped.ShippedTeacherError, match="not the shipped teacher's"):
        shipped.check_vocabulary(written, other, "the run's tokenizer")


def test_heldout_overlap_counts_documents_the_teacher_trained_on():
    assert shipped.heldout_overlap(RECORD, [["x y ."], ["a b c ."]]) == 1
    assert shipped.heldout_overlap(RECORD, [["x y ."]]) == 0
