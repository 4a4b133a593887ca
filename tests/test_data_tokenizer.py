"""WordPiece: training (deterministic across processes), BERT vocab.txt I/O, casing, errors."""

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from mbert_lib.data.builtin_corpus import builtin_documents
from mbert_lib.data.errors import DataError
from mbert_lib.data.tokenizer import (
    SPECIAL_TOKENS,
    WordPieceTokenizer,
    load_tokenizer,
    save_tokenizer,
)
from mbert_lib.data.wordpiece_trainer import train_wordpiece

REPO = Path(__file__).resolve().parents[1]
SYLLABLES = "ka ri to ne mu sa lo pe di ga vu ze".split()


def _texts(seed=0, lines=400):
    """Zipf-like pseudo-words: many frequency ties, which is where trainers differ."""
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(SYLLABLES, rng.integers(1, 4))) for _ in range(300)]
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    return [" ".join(rng.choice(words, 12, p=weights)).capitalize() + " ." for _ in range(lines)]


TRAIN_SCRIPT = """
import sys
from mbert_lib.data.wordpiece_trainer import train_wordpiece
text = open(sys.argv[1], encoding="utf-8").read().split("\\n")
print("\\n".join(train_wordpiece(text, vocab_size=1500).vocab))
"""


@pytest.fixture(scope="module")
def english():
    """Real prose (2,000 sentences of the builtin corpus): plenty of equally frequent pairs."""
    return [s for d in builtin_documents() for s in d][:2000]


def test_training_is_deterministic_within_and_across_processes(english, tmp_path):
    # tokenizers' own WordPieceTrainer gave 4 different vocabularies in 6 runs on this text
    # (Python 3.11.7 docstrings).
    first = train_wordpiece(english, vocab_size=1500).vocab
    for _ in range(4):
        assert train_wordpiece(english, vocab_size=1500).vocab == first
    (tmp_path / "text.txt").write_text("\n".join(english), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", TRAIN_SCRIPT, str(tmp_path / "text.txt")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert tuple(out.stdout.split("\n")[:1500]) == first


def test_trained_vocab_layout_and_exact_size():
    tokenizer = train_wordpiece(_texts(), vocab_size=200)
    assert tokenizer.vocab[:5] == SPECIAL_TOKENS and tokenizer.pad_id == 0
    assert (tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (1, 2, 3, 4)
    assert tokenizer.vocab_size == 200 and not any(t.startswith("[unused") for t in tokenizer.vocab)
    small = train_wordpiece(["tiny text ."] * 3, vocab_size=120)
    first_unused = small.vocab.index("[unused0]")
    assert small.vocab_size == 120 and 5 < first_unused < 120
    assert small.vocab[first_unused:] == tuple(f"[unused{i}]" for i in range(120 - first_unused))


def test_special_token_strings_do_not_train_pieces():
    tokenizer = train_wordpiece(["the [UNK] sat on a [MASK] ."] * 20, vocab_size=60)
    assert "unk" not in tokenizer.vocab and "mask" not in tokenizer.vocab
    assert tokenizer.tokenize("the [UNK] sat") == ["the", "[UNK]", "sat"]


def _greedy_wordpiece(word, vocab):
    """Independent reference: BERT's greedy longest-match-first over one word."""
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def test_tokenization_matches_greedy_longest_match():
    tokenizer = train_wordpiece(_texts(), vocab_size=150)
    vocab = set(tokenizer.vocab)
    rng = np.random.default_rng(3)
    for _ in range(200):
        word = "".join(rng.choice(SYLLABLES + ["x", "q"], rng.integers(1, 6)))
        assert tokenizer.tokenize(word) == _greedy_wordpiece(word, vocab), word


BERT_VOCAB = [
    "[PAD]",
    "[unused0]",
    "[unused1]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "cat",
    "##s",
    "Cat",
    "cafe",
    ",",
    ".",
]


def test_bert_vocab_txt_round_trip_and_casing(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(BERT_VOCAB) + "\n", encoding="utf-8")
    uncased = load_tokenizer(path)
    assert uncased.do_lower_case and uncased.vocab == tuple(BERT_VOCAB)
    assert (uncased.unk_id, uncased.cls_id, uncased.sep_id, uncased.mask_id) == (3, 4, 5, 6)
    assert uncased.special_ids == frozenset(range(7))
    assert uncased.tokenize("The CATS, Café.") == ["the", "cat", "##s", ",", "cafe", "."]
    assert uncased.encode("the cats") == [7, 8, 9] and uncased.decode([7, 8, 9]) == "the cats"
    cased = load_tokenizer(path, do_lower_case=False)
    assert cased.tokenize("Cat cat The") == ["Cat", "cat", "[UNK]"]

    saved = save_tokenizer(cased, tmp_path / "checkpoint")
    assert (saved / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1] == BERT_VOCAB
    config = json.loads((saved / "tokenizer_config.json").read_text())
    assert config["do_lower_case"] is False and config["tokenizer_class"] == "BertTokenizer"
    back = load_tokenizer(saved)
    assert back.vocab == cased.vocab and back.do_lower_case is False and back.sha256 == cased.sha256
    assert back.sha256 != uncased.sha256


def test_lowercasing_strips_accents_only_when_uncased():
    text = "Éclair CAFÉ"
    vocab = list(SPECIAL_TOKENS) + ["eclair", "cafe", "Éclair", "CAFÉ"]
    assert WordPieceTokenizer(vocab, True).tokenize(text) == ["eclair", "cafe"]
    assert WordPieceTokenizer(vocab, False).tokenize(text) == ["Éclair", "CAFÉ"]
    assert unicodedata.normalize("NFD", "é") != "é"  # the accent is a separate code point


@pytest.mark.parametrize(
    "tokens, message",
    [
        (
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"],
            r"vocab.txt: the BERT special tokens \['\[MASK\]'\]",
        ),
        (
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "a"],
            r"vocab.txt: token 'a' appears twice",
        ),
        (["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"], r"vocab.txt: \[PAD\] must have id 0"),
        (["[PAD]", "[UNK]", "", "[CLS]", "[SEP]", "[MASK]"], r"vocab.txt: token 2 is empty"),
    ],
)
def test_bad_vocab_files_name_the_file(tmp_path, tokens, message):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_tokenizer(path)


def test_missing_vocab_and_bad_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="vocab.txt does not exist"):
        load_tokenizer(tmp_path)
    save_tokenizer(WordPieceTokenizer(list(SPECIAL_TOKENS)), tmp_path)
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": "yes"}')
    with pytest.raises(DataError, match="tokenizer_config.json: do_lower_case must be"):
        load_tokenizer(tmp_path)
