"""Learning a WordPiece vocabulary with `tokenizers`, deterministically.

`tokenizers`' own WordPieceTrainer is not deterministic across processes:
it numbers the "##x" continuation symbols in hash-map order, and those
numbers break ties between equally frequent merges (two runs on the builtin
corpus gave vocabularies differing in 4 of 8,192 tokens). So the words are
counted here (BERT normalization and pre-tokenization, from `tokenizers`),
every character after the first is respelled as its own private-use
character, and the plain BPE trainer runs on that fixed, sorted alphabet;
its tokens are then spelled back ("x" + continuation "yz" -> "xyz", a token
of continuation characters "yz" -> "##yz"), which is WordPiece's vocabulary.

Layout: [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4, the learned tokens in
sorted order (a WordPiece vocabulary's order carries no meaning), then
"[unusedN]" fillers (as in BERT's vocab) when the corpus runs out of merges
before `vocab_size`, so the vocabulary always has exactly the size asked for.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import tokenizers
from tokenizers import models, normalizers, pre_tokenizers, trainers

from mbert_lib.data.errors import DataError
from mbert_lib.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer

_CONTINUATION = 0xF0000  # Unicode plane 15, private use: never in the alphabet itself
TRAINER_VERSION = 1  # part of the prepare step's cache key: bump when the algorithm changes


def _word_counts(texts: Iterable[str], do_lower_case: bool) -> collections.Counter:
    normalizer = normalizers.BertNormalizer(lowercase=do_lower_case, strip_accents=None)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts: collections.Counter = collections.Counter()
    for text in texts:
        for token in SPECIAL_TOKENS:  # "[UNK]" stands for a word; it must not teach "unk"
            text = text.replace(token, " ")
        counts.update(w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    return counts


def _alphabet(counts: collections.Counter, limit: int) -> list[str]:
    """The `limit` most frequent characters (ties by code point), sorted."""
    chars: collections.Counter = collections.Counter()
    for word, count in counts.items():
        for char in word:
            chars[char] += count
    usable = [c for c in chars if ord(c) < _CONTINUATION]
    return sorted(sorted(usable, key=lambda c: (-chars[c], c))[:limit])


def train_wordpiece(
    texts: Iterable[str],
    vocab_size: int = 8192,
    do_lower_case: bool = True,
    min_frequency: int = 2,
    limit_alphabet: int = 1000,
) -> WordPieceTokenizer:
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens from `texts`.

    Words with a character outside the `limit_alphabet` most frequent ones
    are left out (the tokenizer reads them as [UNK]); a merge needs
    `min_frequency` occurrences. Same texts, same vocabulary, in any process.
    """
    if vocab_size <= len(SPECIAL_TOKENS):
        raise DataError(f"vocab_size must be > {len(SPECIAL_TOKENS)}, got {vocab_size}")
    counts = _word_counts(texts, do_lower_case)
    alphabet = _alphabet(counts, limit_alphabet)
    if not alphabet:
        raise DataError("cannot train a vocabulary on empty text")
    index = {c: i for i, c in enumerate(alphabet)}
    spelled_back = {chr(_CONTINUATION + i): c for i, c in enumerate(alphabet)}

    def respelled():
        for word, count in sorted(counts.items()):
            if all(c in index for c in word):
                word = word[0] + "".join(chr(_CONTINUATION + index[c]) for c in word[1:])
                yield " ".join([word] * count)

    model = tokenizers.Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    model.train_from_iterator(
        respelled(),
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=alphabet,
            show_progress=False,
        ),
    )
    learned = set()
    for token in model.get_vocab():
        if token not in SPECIAL_TOKENS:
            text = "".join(spelled_back.get(c, c) for c in token)
            learned.add("##" + text if token[0] in spelled_back else text)
    vocab = list(SPECIAL_TOKENS) + sorted(learned)[: vocab_size - len(SPECIAL_TOKENS)]
    vocab += [f"[unused{i}]" for i in range(vocab_size - len(vocab))]
    return WordPieceTokenizer(vocab, do_lower_case, source="trained vocabulary")
