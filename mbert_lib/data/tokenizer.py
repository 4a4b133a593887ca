"""WordPiece tokenization (BERT's) over a vocabulary trained here or read from a vocab.txt.

`WordPieceTokenizer` wraps a `tokenizers.Tokenizer` built from a vocabulary
list, so a freshly trained vocabulary and one read from a released BERT
`vocab.txt` (one token per line, id = line number) take the same code path:
BERT normalization (clean-up, CJK spacing, lowercasing and accent stripping
when `do_lower_case`), BERT pre-tokenization (whitespace and punctuation),
greedy longest-match WordPiece with "##" continuations, [UNK] for a word
that cannot be spelled.

Training lives in `wordpiece_trainer.py`.

Beside a checkpoint: `vocab.txt` + `tokenizer_config.json` ({"do_lower_case":
..., "tokenizer_class": "BertTokenizer", ...}, the Hugging Face names).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers

from mbert_lib import atomic
from mbert_lib.data.errors import DataError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
VOCAB_FILE = "vocab.txt"
CONFIG_FILE = "tokenizer_config.json"


class WordPieceTokenizer:
    """BERT WordPiece over a fixed vocabulary (V tokens, id = position)."""

    def __init__(self, vocab: Sequence[str], do_lower_case: bool = True, source: str = "vocab"):
        vocab = list(vocab)
        index: dict[str, int] = {}
        for i, token in enumerate(vocab):
            if not token or token != token.strip():
                raise DataError(
                    f"{source}: token {i} is empty or has surrounding spaces: {token!r}"
                )
            if token in index:
                raise DataError(
                    f"{source}: token {token!r} appears twice (ids {index[token]} and {i})"
                )
            index[token] = i
        missing = [t for t in SPECIAL_TOKENS if t not in index]
        if missing:
            raise DataError(f"{source}: the BERT special tokens {missing} are missing")
        if index[PAD] != 0:
            raise DataError(
                f"{source}: {PAD} must have id 0 (inputs are padded with 0), it has id {index[PAD]}"
            )
        self.vocab, self.do_lower_case, self._index = tuple(vocab), bool(do_lower_case), index
        tok = tokenizers.Tokenizer(
            models.WordPiece(index, unk_token=UNK, max_input_chars_per_word=100)
        )
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=True,
            strip_accents=None,
            lowercase=self.do_lower_case,
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        tok.add_special_tokens(list(SPECIAL_TOKENS))
        self._tokenizer = tok

    # ----------------------------------------------------------------- ids
    @property
    def vocab_size(self) -> int:
        """V."""
        return len(self.vocab)

    def token_to_id(self, token: str) -> int:
        if token not in self._index:
            raise KeyError(f"{token!r} is not in the vocabulary")
        return self._index[token]

    pad_id = property(lambda self: self._index[PAD])
    unk_id = property(lambda self: self._index[UNK])
    cls_id = property(lambda self: self._index[CLS])
    sep_id = property(lambda self: self._index[SEP])
    mask_id = property(lambda self: self._index[MASK])

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids of every bracketed token ([PAD], [CLS], ..., [unused7]): never a real word."""
        return frozenset(i for t, i in self._index.items() if t[0] == "[" and t[-1] == "]")

    @property
    def sha256(self) -> str:
        """Identifies the tokenizer (vocabulary and casing) in cache keys."""
        text = "\n".join(self.vocab) + f"\ndo_lower_case={self.do_lower_case}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    # ------------------------------------------------------------ encoding
    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of `text`, without [CLS]/[SEP]."""
        return self._tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, without [CLS]/[SEP]."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """`encode` over many texts (in parallel inside `tokenizers`)."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Text of `ids`, "##" pieces joined to the previous token."""
        return self._tokenizer.decode(list(map(int, ids)), skip_special_tokens=skip_special_tokens)

    def __repr__(self) -> str:
        return (
            f"WordPieceTokenizer(vocab_size={self.vocab_size}, do_lower_case={self.do_lower_case})"
        )


def read_vocab_file(path: str | os.PathLike) -> list[str]:
    """Tokens of a BERT `vocab.txt` (one per line, id = line number - 1)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"vocabulary file {path} does not exist")
    try:
        tokens = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e})") from e
    if tokens and tokens[-1] == "":
        tokens.pop()
    if not tokens:
        raise DataError(f"{path}: empty vocabulary file")
    return [t.rstrip("\r") for t in tokens]


def save_tokenizer(tokenizer: WordPieceTokenizer, directory: str | os.PathLike) -> Path:
    """Writes vocab.txt and tokenizer_config.json into `directory` (e.g. a checkpoint dir)."""
    directory = Path(directory)
    for name, text in tokenizer_files(tokenizer).items():
        atomic.write_text(directory / name, text)
    return directory


def tokenizer_files(
    tokenizer: WordPieceTokenizer,
    max_length: int | None = None,
    tokenizer_class: str = "BertTokenizer",
) -> dict[str, str]:
    """{file name: text} of vocab.txt and tokenizer_config.json: casing, special tokens and,
    given max_length (the model's max_position_embeddings), the length limit that
    transformers' `truncation=True` cuts to."""
    config = {
        "tokenizer_class": tokenizer_class,
        "do_lower_case": tokenizer.do_lower_case,
        "vocab_size": tokenizer.vocab_size,
        "unk_token": UNK,
        "sep_token": SEP,
        "pad_token": PAD,
        "cls_token": CLS,
        "mask_token": MASK,
    }
    if max_length is not None:
        config["model_max_length"] = int(max_length)
    return {
        VOCAB_FILE: "\n".join(tokenizer.vocab) + "\n",
        CONFIG_FILE: json.dumps(config, indent=2) + "\n",
    }


def load_tokenizer(
    path: str | os.PathLike, do_lower_case: bool | None = None
) -> WordPieceTokenizer:
    """Reads a tokenizer from a directory (vocab.txt [+ tokenizer_config.json]) or a vocab.txt.

    Casing: `do_lower_case` if given, else the json's value, else True (the
    released MobileBERT checkpoints are uncased).
    """
    path = Path(path)
    vocab_path = path / VOCAB_FILE if path.is_dir() else path
    config_path = vocab_path.parent / CONFIG_FILE
    if do_lower_case is None and config_path.is_file():
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise DataError(f"{config_path}: not valid JSON ({e})") from e
        value = config.get("do_lower_case", True)
        if not isinstance(value, bool):
            raise DataError(f"{config_path}: do_lower_case must be true or false, got {value!r}")
        do_lower_case = value
    vocab = read_vocab_file(vocab_path)
    return WordPieceTokenizer(
        vocab, True if do_lower_case is None else do_lower_case, source=str(vocab_path)
    )
