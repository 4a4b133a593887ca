"""The offline default corpus: real prose from the standard library, deterministic."""

import os
import subprocess
import sys
from pathlib import Path

from mbert_lib.data import builtin_documents, load_builtin_corpus, parse_documents
from mbert_lib.data.provenance import sha256_bytes

REPO = Path(__file__).resolve().parents[1]
SCRIPT = (
    "from mbert_lib.data import load_builtin_corpus; import hashlib; "
    "print(hashlib.sha256(load_builtin_corpus().encode()).hexdigest())"
)


def test_builtin_corpus_is_substantial_prose():
    documents = builtin_documents()
    sentences = [s for d in documents for s in d]
    words = sum(len(s.split()) for s in sentences)
    assert len(documents) >= 300 and len(sentences) >= 5000 and words >= 100_000
    assert len(load_builtin_corpus().encode()) >= 500_000
    assert not any(s.startswith((">>>", "...")) for s in sentences), "no doctest lines"
    assert sum(s[0].isupper() for s in sentences) / len(sentences) > 0.9
    assert any(s.startswith("Assert statements are a convenient way") for s in sentences), (
        "the help topics (pydoc_data) are included"
    )
    assert len(set(sentences)) / len(sentences) > 0.95, "paragraphs are deduplicated"


def test_text_round_trips_through_the_example_builder_format():
    text = load_builtin_corpus()
    assert parse_documents(text) == builtin_documents()
    assert "\n\n\n" not in text and text.endswith("\n")


def test_builtin_corpus_is_identical_in_another_process():
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONHASHSEED="123", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == sha256_bytes(load_builtin_corpus().encode())
