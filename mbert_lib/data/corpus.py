"""Pre-training text from one of three sources, one `Corpus` after loading.

    source "hub"      WikiText (raw) train split [+ SST-2 train sentences] via `datasets`
    source "local"    WikiText files [+ SST-2 train.tsv] under a directory in the
                      original layouts (`--data-dir` / MBERT_DATA_DIR)
    source "builtin"  the standard library's docstrings and help topics (no download)
    source "auto"     "local" when a directory is given or MBERT_DATA_DIR is set,
                      else "builtin"

SST-2 enters pre-training only through its *training* sentences; any of
them that also occurs in SST-2 dev or test (case and spacing ignored) is
dropped, so no evaluation sentence is ever seen during pre-training. The
training phrases come shuffled, so they are grouped into pseudo-documents of
`SST2_SENTENCES_PER_DOCUMENT` rows: good MLM text, but their "next
sentence" is unrelated, so NSP cannot be learned on them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from mbert_lib.data import glue, wikitext
from mbert_lib.data.builtin_corpus import builtin_documents, builtin_source_file
from mbert_lib.data.data_dir import DATA_DIR_ENV, resolve_data_dir
from mbert_lib.data.errors import DataError
from mbert_lib.data.hub import load_hub_split
from mbert_lib.data.provenance import SourceFile, expected_sha256, sha256_bytes, sha256_file
from mbert_lib.data.text import (
    Document,
    count_words,
    document_sha256,
    format_documents,
    normalize_whitespace,
)

SOURCES = ("auto", "builtin", "local", "hub")
SST2_SENTENCES_PER_DOCUMENT = 100


@dataclasses.dataclass
class Corpus:
    """Documents (lists of sentences) and where they came from."""

    name: str
    documents: list[Document]
    files: list[SourceFile]

    def text(self) -> str:
        """One sentence per line, a blank line between documents."""
        return format_documents(self.documents)

    @property
    def num_sentences(self) -> int:
        return sum(map(len, self.documents))

    @property
    def num_words(self) -> int:
        return count_words(self.documents)

    def describe(self) -> str:
        lines = [
            f"corpus {self.name}: {len(self.documents):,} documents, "
            f"{self.num_sentences:,} sentences, {self.num_words:,} words"
        ]
        lines += ["  " + f.describe() for f in self.files]
        return "\n".join(lines)


def _key(sentence: str) -> str:
    return normalize_whitespace(sentence).lower()


def sst2_documents(sentences: Sequence[str], forbidden: set[str]) -> tuple[list[Document], int]:
    """Pseudo-documents of consecutive SST-2 sentences, minus those in `forbidden`.

    Returns the documents and the number of sentences dropped.
    """
    kept = [normalize_whitespace(s) for s in sentences if _key(s) not in forbidden]
    documents = [
        kept[i : i + SST2_SENTENCES_PER_DOCUMENT]
        for i in range(0, len(kept), SST2_SENTENCES_PER_DOCUMENT)
    ]
    return documents, len(sentences) - len(kept)


def _local_sst2(data_dir: Path) -> tuple[list[Document], SourceFile]:
    sst2_dir = glue.find_sst2_dir(data_dir)
    path = sst2_dir / glue.SST2_FILES["train"]
    sentences = [s for s, _ in glue.read_sst2_tsv(path)]
    forbidden: set[str] = set()
    for split in ("dev", "test"):
        other = sst2_dir / glue.SST2_FILES[split]
        if other.is_file():
            forbidden.update(_key(s) for s, _ in glue.read_sst2_tsv(other))
    documents, dropped = sst2_documents(sentences, forbidden)
    note = (
        f"training sentences only; {dropped} dropped because they occur in dev/test"
        if forbidden
        else "training sentences only; no dev/test file to check against"
    )
    return documents, SourceFile(
        name=str(path),
        size_bytes=path.stat().st_size,
        sha256=sha256_file(path),
        expected_sha256=expected_sha256(path),
        documents=len(documents),
        sentences=sum(map(len, documents)),
        words=count_words(documents),
        note=note,
    )


def _hub_sst2(loader: Callable | None) -> tuple[list[Document], SourceFile]:
    sentences = [s for s, _ in glue.load_sst2("train", "hub", hub_loader=loader)]
    forbidden = {
        _key(row["sentence"])
        for split in ("validation", "test")
        for row in load_hub_split(glue.HUB_PATH, glue.HUB_CONFIG, split, loader)
    }
    documents, dropped = sst2_documents(sentences, forbidden)
    data = "\n".join(sentences).encode("utf-8")
    return documents, SourceFile(
        name=f"hub {glue.HUB_PATH}/{glue.HUB_CONFIG} split train",
        size_bytes=len(data),
        sha256=sha256_bytes(data),
        documents=len(documents),
        sentences=sum(map(len, documents)),
        words=count_words(documents),
        note=f"sentences only; {dropped} dropped because they occur in validation/test",
    )


def load_pretraining_corpus(
    source: str = "auto",
    data_dir: str | os.PathLike | None = None,
    *,
    wikitext_name: str = "wikitext-2",
    wikitext_splits: Sequence[str] | None = None,
    include_sst2: bool = True,
    hub_loader: Callable | None = None,
) -> Corpus:
    """Loads pre-training text; see the module docstring for the sources.

    wikitext_splits: None = "train" when available, else every split present
    (the project's shared copy has only valid and test). include_sst2 adds
    the SST-2 training sentences (ignored by "builtin").
    """
    if source not in SOURCES:
        raise DataError(f"unknown source {source!r}; expected one of {SOURCES}")
    resolved = resolve_data_dir(data_dir)
    if source == "auto":
        source = "local" if resolved is not None else "builtin"
    if source == "builtin":
        documents = builtin_documents()
        return Corpus("builtin", documents, [builtin_source_file(documents)])
    if source == "local":
        if resolved is None:
            raise DataError(
                f"source 'local' needs a directory: pass --data-dir or set {DATA_DIR_ENV}"
            )
        documents, files = wikitext.read_local(resolved, wikitext_name, wikitext_splits)
    else:
        documents, files = wikitext.read_hub(
            wikitext_name, wikitext_splits or ("train",), hub_loader
        )
    name = f"{source}-{wikitext_name}"
    if include_sst2:
        sst2_docs, sst2_file = _local_sst2(resolved) if source == "local" else _hub_sst2(hub_loader)
        documents, files, name = documents + sst2_docs, files + [sst2_file], name + "+sst2"
    return Corpus(name, documents, files)


def split_heldout(
    documents: Sequence[Document], fraction: float = 0.05
) -> tuple[list[Document], list[Document]]:
    """(train, heldout): whole documents, chosen by content hash, order kept.

    Documents are taken in order of their sha256 until the held-out part has
    `fraction` of the corpus's words (documents differ a lot in length, so
    counting documents would not say how much text is held out). The choice
    depends on nothing but the documents themselves. Both parts keep at
    least two documents (NSP draws a random segment from another document).
    """
    if not 0.0 < fraction < 1.0:
        raise DataError(f"heldout_fraction must be in (0, 1), got {fraction}")
    n = len(documents)
    if n < 4:
        raise DataError(
            f"a corpus of {n} documents is too small to hold out whole documents "
            "and keep at least two on each side"
        )
    words = [count_words([d]) for d in documents]
    budget = fraction * sum(words)
    ranked = sorted(range(n), key=lambda i: (document_sha256(documents[i]), i))
    held, taken = set(), 0
    for i in ranked:
        if len(held) >= 2 and (taken >= budget or len(held) == n - 2):
            break
        held.add(i)
        taken += words[i]
    return (
        [d for i, d in enumerate(documents) if i not in held],
        [d for i, d in enumerate(documents) if i in held],
    )
