"""TFLite metadata for a fine-tuned classifier, checked by its real client: the Task Library's
BertNLClassifier (tflite-support, in its own venv) classifies raw text with the exported file
alone and agrees with the project's classifier; what it cannot run is refused up front."""

import json
import subprocess

import numpy as np
import pytest

from mbert_lib.checkpoints import write_model_files
from mbert_lib.cli import main
from mbert_lib.data.tokenizer import save_tokenizer
from mbert_lib.export import tflite_metadata
from tests.classifier_fixtures import SENTENCES, SEQ, packed_ids, save_classifier
from tests.finetune_fixtures import tokenizer
from tests.helpers import randomize_affine_weights, randomize_kernels

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it

CLIENT = """
import json, sys
from tflite_support.task import text
classifier = text.BertNLClassifier.create_from_file(sys.argv[1])
print(json.dumps([{c.category_name: c.score for c in
                   classifier.classify(t).classifications[0].categories}
                  for t in json.loads(sys.argv[2])]))
"""
TEXTS = SENTENCES + [
    "The Movie was GREAT, wasn't it?",
    "a plot, a film; the end!",
    "zyxqv is a word it has never seen",
]
ACCENTED = "thé fílm wás vèry gòod"  # the project's (BERT's uncased) tokenizer: "the film ..."


def _export(tmp_path, task="sst2", classes=2, extra=()):
    """A classifier whose output moves with every token (random kernels and biases), exported
    by the command line with metadata; (the model, the exit status)."""
    model = save_classifier(tmp_path / "classifier", task, classes, seed=3)
    randomize_kernels(model, seed=4)
    randomize_affine_weights(model, seed=5)
    write_model_files(
        model, tmp_path / "classifier", save_tokenizer=lambda d: save_tokenizer(tokenizer(), d)
    )
    argv = [
        "export",
        "tflite",
        "--checkpoint",
        str(tmp_path / "classifier"),
        "--model",
        "classifier",
        "--precision",
        "fp32",
        "--seq_length",
        str(SEQ),
        "--metadata",
        "--output",
        str(tmp_path / "classifier.tflite"),
        *extra,
    ]
    return model, main(argv)


def test_bert_nl_classifier_runs_the_export_and_agrees_with_the_project(tmp_path):
    try:
        python = tflite_metadata.support_python()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    model, status = _export(tmp_path)
    assert status == 0
    texts = TEXTS + [ACCENTED]
    done = subprocess.run(
        [python, "-I", "-c", CLIENT, str(tmp_path / "classifier.tflite"), json.dumps(texts)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    logits = model(packed_ids(tmp_path / "classifier" / "vocab.txt", texts), training=False)[
        "logits"
    ].numpy()
    ours = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    theirs = np.array([[row["negative"], row["positive"]] for row in scores])
    assert np.ptp(ours[:, 0]) > 0.1  # the texts are told apart
    np.testing.assert_allclose(theirs[:-1], ours[:-1], atol=1e-5)
    # The Task Library's BertTokenizer lower-cases but keeps accents (its metadata has no
    # option for it), where an uncased BERT vocabulary was built with them stripped: the
    # README and the command's note say so, and this keeps them honest.
    assert abs(theirs[-1, 0] - ours[-1, 0]) > 1e-3


@pytest.mark.parametrize(
    "task, classes, extra, message",
    [
        ("stsb", 1, (), "is a regression"),
        ("mrpc", 2, (), "reads sentence pairs"),
        ("sst2", 2, ("--dynamic_shape",), "needs a fixed input shape"),
        ("sst2", 2, ("--metadata_python", "/nowhere/python"), "/nowhere/python does not exist"),
    ],
)
def test_what_bert_nl_classifier_cannot_run_is_refused_before_converting(
    tmp_path, capsys, task, classes, extra, message
):
    _, status = _export(tmp_path, task, classes, extra)
    err = capsys.readouterr().err
    assert status == 2 and message in err, err
    assert not (tmp_path / "classifier.tflite").exists()
