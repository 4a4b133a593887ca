"""`builtin_shuffled`: the offline labeled task, built from the builtin stdlib-docs corpus.

NOT a GLUE task and never reported as one. It exists so that fine-tuning
runs with no data set reachable (CI, the notebooks' fast mode, a laptop
offline). Each example is one sentence of the standard library's
docstrings (`mbert_lib.data.builtin_documents`):

    label 1 "original"   the sentence as written
    label 0 "shuffled"   the same words in a random order (the final '.', '?', '!'
                         or ':' stays at the end)

Both classes have exactly the same words, so a bag of words cannot tell
them apart: the model must use word order, which masked-LM pre-training
teaches. The class of a sentence and its permutation are drawn from a
generator seeded by the sentence's sha256: the task is deterministic for a
Python installation (the corpus differs between Python versions).

Splits share no documents: dev is the documents `split_heldout` holds out
of the corpus with the pre-training default fraction, i.e. the very
documents that pre-training on the builtin corpus keeps out of its
training text; a dev sentence that also occurs in a train document is
removed from train.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from mbert_lib.data.builtin_corpus import builtin_documents
from mbert_lib.data.corpus import split_heldout
from mbert_lib.data.errors import DataError
from mbert_lib.data.glue import GlueExample
from mbert_lib.data.text import Document

NAME = "builtin_shuffled"
LABEL_NAMES = ("shuffled", "original")
HELDOUT_FRACTION = 0.05  # = PrepareSettings' default heldout_fraction
MIN_WORDS, MAX_WORDS = 6, 40
_END_MARKS = ".?!:"


def _generator(sentence: str) -> np.random.Generator:
    digest = hashlib.sha256(sentence.encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def shuffle_words(sentence: str, rng: np.random.Generator) -> str:
    """The words of `sentence` in a random order that differs from the original."""
    words = sentence.split()
    mark = words[-1][-1] if words[-1][-1] in _END_MARKS else ""
    if mark:
        words[-1] = words[-1][:-1] or words[-1]
    order = rng.permutation(len(words))
    shuffled = [words[i] for i in order]
    if shuffled == words:  # the identity (or repeated words): rotate by one
        shuffled = shuffled[1:] + shuffled[:1]
    return " ".join(shuffled) + mark


def label_sentence(sentence: str) -> GlueExample:
    """One example: the sentence kept (label 1) or its words shuffled (label 0)."""
    rng = _generator(sentence)
    if rng.integers(2) == 1:
        return GlueExample(sentence, None, 1)
    return GlueExample(shuffle_words(sentence, rng), None, 0)


def _usable(sentence: str) -> bool:
    words = sentence.split()
    return MIN_WORDS <= len(words) <= MAX_WORDS and len(set(words)) > 1


def builtin_shuffled_examples(
    split: str, documents: Sequence[Document] | None = None
) -> list[GlueExample]:
    """The "train" or "dev" examples of builtin_shuffled (of `documents`, default the corpus)."""
    if split not in ("train", "dev"):
        raise DataError(f"{NAME} has the splits 'train' and 'dev', not {split!r}")
    if documents is None:
        documents = builtin_documents()
    train_docs, dev_docs = split_heldout(documents, HELDOUT_FRACTION)
    dev = [s for d in dev_docs for s in d if _usable(s)]
    if split == "dev":
        return [label_sentence(s) for s in dev]
    in_dev = set(dev)
    return [label_sentence(s) for d in train_docs for s in d if _usable(s) and s not in in_dev]
