"""Plain-text corpus format shared by every source, and sentence splitting.

A corpus is a list of documents; a document is a list of sentences (strings
without newlines). On disk and in `load_builtin_corpus()` it uses the input
format of BERT's `create_pretraining_data.py`: one sentence per line, a blank
line between documents. Next-sentence prediction draws its "real next"
segment from the same document and its "random" segment from another one,
so document boundaries matter; sentence boundaries are where segments may
be split.

Every line read from a file is at most MAX_LINE_CHARS characters
(`read_text`). Real corpora stay far below it (WikiText's longest paragraph
has a few thousand characters, an SST-2 sentence a few hundred); a longer line
is a file that lost its line breaks, and is refused naming its line number
rather than tokenized for minutes into gigabytes of one "sentence".
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from mbert_lib.data.errors import DataError

Document = list[str]

MAX_LINE_CHARS = 1_000_000

# Words whose trailing period does not end a sentence.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st sr jr vs etc e.g i.e cf no vol fig approx ca lt col gen gov".split()
)
# End punctuation (+ closing quotes/brackets), whitespace, then a capital letter
# (optionally after an opening quote or bracket).
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z])")


def read_text(path: str | Path) -> str:
    """The contents of UTF-8 text file `path`, every line checked against MAX_LINE_CHARS;
    DataError naming the file (and line) when it is not such a file. A leading byte-order
    mark (what some Windows editors write) is dropped, not read as text."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e})") from e
    lengths = list(map(len, text.split("\n")))
    if lengths and max(lengths) > MAX_LINE_CHARS:
        number = next(i for i, n in enumerate(lengths, start=1) if n > MAX_LINE_CHARS)
        raise DataError(
            f"{path}:{number}: a line of {lengths[number - 1]:,} characters, over "
            f"the limit of {MAX_LINE_CHARS:,} (mbert_lib.data.text.MAX_LINE_CHARS); "
            "a file whose line breaks were lost? One sentence or paragraph per line "
            "is expected"
        )
    return text


def normalize_whitespace(text: str) -> str:
    """Collapses runs of whitespace (newlines included) into single spaces."""
    return " ".join(text.split())


def split_sentences(paragraph: str) -> list[str]:
    """Splits a paragraph into sentences with a small rule-based splitter.

    A boundary is '.', '!' or '?' followed by whitespace and a capital letter,
    except after a single capital (an initial: "H. americanus") or a common
    abbreviation ("Dr. Smith"). Imperfect by design: sentences only decide
    where a BERT segment may be cut, never what a token is.
    """
    paragraph = normalize_whitespace(paragraph)
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(paragraph):
        words = paragraph[start : match.start()].split()
        last = words[-1].lower() if words else ""
        if (len(last) == 1 and last.isalpha()) or last.rstrip(".") in _ABBREVIATIONS:
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def format_documents(documents: Sequence[Document]) -> str:
    """BERT's input format: one sentence per line, a blank line between documents."""
    blocks = []
    for index, document in enumerate(documents):
        for sentence in document:
            if not sentence or "\n" in sentence:
                raise ValueError(
                    f"document {index}: sentences must be non-empty single lines, got {sentence!r}"
                )
        if document:
            blocks.append("\n".join(document))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def parse_documents(text: str) -> list[Document]:
    """Inverse of `format_documents`: blank lines separate documents."""
    documents, current = [], []
    for line in text.split("\n"):
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    return documents


def document_sha256(document: Document) -> str:
    """A content hash of one document (used to pick held-out documents)."""
    return hashlib.sha256("\n".join(document).encode("utf-8")).hexdigest()


def count_words(documents: Sequence[Document]) -> int:
    """Whitespace-separated words over all sentences."""
    return sum(len(sentence.split()) for document in documents for sentence in document)
