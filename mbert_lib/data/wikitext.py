"""WikiText (Merity et al., 2016) as pre-training documents: local files or the hub.

Both sources give the same lines, so one parser serves both:

    " = Homarus gammarus = "            an article title: a new document starts
    " = = Description = = "            a section heading: dropped (BERT drops headers)
    " Homarus gammarus is a large ..."  a paragraph: split into sentences

Detokenization: the release splits hyphens and number separators as
" @-@ ", " @,@ ", " @.@ "; they are joined back ("well @-@ known" ->
"well-known", "1 @,@ 000" -> "1,000"). The remaining spaces around
punctuation (" , ", " 's") are left alone: BERT's pre-tokenizer splits on
punctuation anyway, so they do not change a single token.

`<unk>` (the tokenized release's mark for words seen fewer than 3 times) is
rewritten as "[UNK]", which the WordPiece tokenizer reads as its unknown
token: the word is unknown in the source, so it stays unknown, instead of
being spelled as the pieces "<", "unk", ">". [UNK] is context for MLM but
never a prediction target (see `examples.py`). The raw releases have no `<unk>`.

Local layouts (first match wins), for NAME in {wikitext-2, wikitext-103}:
    <data_dir>/NAME/{split}.txt            (the project's shared copy)
    <data_dir>/NAME/wiki.{split}.tokens    (the original tokenized zip)
    <data_dir>/NAME-raw/wiki.{split}.raw   (the original raw zip)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from mbert_lib.data.errors import DataError
from mbert_lib.data.hub import load_hub_split
from mbert_lib.data.provenance import SourceFile, expected_sha256, sha256_bytes, sha256_file
from mbert_lib.data.text import Document, count_words, read_text, split_sentences

NAMES = ("wikitext-2", "wikitext-103")
SPLITS = ("train", "valid", "test")
HUB_PATH = "Salesforce/wikitext"
HUB_CONFIGS = {"wikitext-2": "wikitext-2-raw-v1", "wikitext-103": "wikitext-103-raw-v1"}
_HUB_SPLITS = {"train": "train", "valid": "validation", "test": "test"}

_HEADING = re.compile(r"^((?:= )+)(?!=)(.*?\S) (=(?: =)*)$")  # "= = Title = =": level 2
_MARKERS = {" @-@ ": "-", " @,@ ": ",", " @.@ ": "."}


def detokenize(line: str) -> str:
    """Joins WikiText's ` @-@ `, ` @,@ `, ` @.@ ` separators; `<unk>` becomes `[UNK]`."""
    for marker, joined in _MARKERS.items():
        line = line.replace(marker, joined)
    return line.replace("<unk>", "[UNK]")


def wikitext_documents(lines: Iterable[str]) -> list[Document]:
    """WikiText lines (file or hub rows) -> one document per article."""
    documents: list[Document] = []
    current: Document = []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        heading = _HEADING.match(line)
        if heading and heading.group(1).count("=") == heading.group(3).count("="):
            if heading.group(1) == "= " and current:
                documents.append(current)
                current = []
            continue
        current.extend(split_sentences(detokenize(line)))
    if current:
        documents.append(current)
    return documents


def _check(name: str) -> None:
    if name not in NAMES:
        raise DataError(f"unknown WikiText name {name!r}; expected one of {NAMES}")


def local_candidates(data_dir: Path, name: str, split: str) -> list[Path]:
    """The paths where `split` of `name` may sit, in the order they are tried."""
    return [
        data_dir / name / f"{split}.txt",
        data_dir / name / f"wiki.{split}.tokens",
        data_dir / f"{name}-raw" / f"wiki.{split}.raw",
    ]


def _default_splits(found: dict[str, Path | None]) -> list[str]:
    """The training split when present, otherwise every split present."""
    if found["train"] is not None:
        return ["train"]
    return [s for s in SPLITS if found[s] is not None]


def read_local(
    data_dir: str | Path, name: str = "wikitext-2", splits: Sequence[str] | None = None
) -> tuple[list[Document], list[SourceFile]]:
    """Documents and provenance from WikiText files under `data_dir`.

    `splits=None` takes "train" when present, else every split present (the
    shared copy has only valid and test). A split asked for by name must exist.
    """
    _check(name)
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"data directory {data_dir} does not exist")
    found = {
        s: next((p for p in local_candidates(data_dir, name, s) if p.is_file()), None)
        for s in SPLITS
    }
    wanted = list(splits) if splits is not None else _default_splits(found)
    if not wanted:
        tried = ", ".join(str(p) for s in SPLITS for p in local_candidates(data_dir, name, s))
        raise FileNotFoundError(f"no {name} file under {data_dir}; looked for: {tried}")
    documents, files = [], []
    for split in wanted:
        if split not in SPLITS:
            raise DataError(f"unknown WikiText split {split!r}; expected one of {SPLITS}")
        path = found[split]
        if path is None:
            tried = ", ".join(map(str, local_candidates(data_dir, name, split)))
            raise FileNotFoundError(f"{name} split {split!r} not found; looked for: {tried}")
        docs = wikitext_documents(read_text(path).split("\n"))
        if not docs:
            raise DataError(f"{path}: no text (the file is empty or has only headings)")
        documents.extend(docs)
        files.append(
            SourceFile(
                name=str(path),
                size_bytes=path.stat().st_size,
                sha256=sha256_file(path),
                expected_sha256=expected_sha256(path),
                documents=len(docs),
                sentences=sum(map(len, docs)),
                words=count_words(docs),
            )
        )
    return documents, files


def read_hub(
    name: str = "wikitext-2",
    splits: Sequence[str] | None = ("train",),
    loader: Callable | None = None,
) -> tuple[list[Document], list[SourceFile]]:
    """Documents and provenance from the `datasets` hub (the raw release)."""
    _check(name)
    documents, files = [], []
    for split in splits or ("train",):
        if split not in _HUB_SPLITS:
            raise DataError(f"unknown WikiText split {split!r}; expected one of {SPLITS}")
        rows = load_hub_split(HUB_PATH, HUB_CONFIGS[name], _HUB_SPLITS[split], loader)
        lines = [row["text"] for row in rows]
        docs = wikitext_documents(lines)
        label = f"hub {HUB_PATH}/{HUB_CONFIGS[name]} split {_HUB_SPLITS[split]}"
        if not docs:
            raise DataError(f"{label}: no text")
        data = "\n".join(lines).encode("utf-8")
        documents.extend(docs)
        files.append(
            SourceFile(
                name=label,
                size_bytes=len(data),
                sha256=sha256_bytes(data),
                documents=len(docs),
                sentences=sum(map(len, docs)),
                words=count_words(docs),
            )
        )
    return documents, files
