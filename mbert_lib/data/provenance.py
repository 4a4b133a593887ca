"""Provenance of loaded data: sha256, sizes, and the published checksums of the originals.

The table holds the checksums listed with the project's read-only copy of the
data (`../shared/data/README.md`), keyed by the last two path components so a
file matches whether it sits in `<dir>/glue/SST-2/` or `<dir>/SST-2/`. A
mismatch is reported, never fatal: another release of the same data set is
still usable, but the numbers it gives are not comparable.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import warnings
from pathlib import Path

KNOWN_SHA256 = {
    "wikitext-2/test.txt": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
    "wikitext-2/valid.txt": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
    "SST-2/dev.tsv": "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
    "SST-2/test_labeled.tsv": "c0efc56ade6e0598d0f8daca1976e232aee0bcabca8e599341cad290d9d10b3c",
    "SST-2/train.tsv": "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def expected_sha256(path: str | os.PathLike) -> str | None:
    """The published checksum for `path`, or None when the file is not in the table."""
    parts = Path(path).parts
    return KNOWN_SHA256.get("/".join(parts[-2:]))


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """Where part of a corpus came from: a file, a hub split or the builtin text.

    `sha256` is of the file's bytes for local files and of the UTF-8 text
    (lines joined by newlines) for hub splits and the builtin corpus.
    """

    name: str
    size_bytes: int
    sha256: str
    documents: int
    sentences: int
    words: int
    expected_sha256: str | None = None
    note: str = ""

    @property
    def checksum_status(self) -> str:
        if self.expected_sha256 is None:
            return "no published checksum"
        return "ok" if self.sha256 == self.expected_sha256 else "MISMATCH"

    def describe(self) -> str:
        """One line for the prepare step's printout."""
        line = (
            f"{self.name}: {self.size_bytes / 1e6:.2f} MB, {self.documents:,} documents, "
            f"{self.sentences:,} sentences, {self.words:,} words, sha256 {self.sha256} "
            f"({self.checksum_status})"
        )
        return line + (f"; {self.note}" if self.note else "")

    def warn_on_mismatch(self) -> None:
        """A warning (never an error) when the checksum differs from the published one."""
        if self.checksum_status == "MISMATCH":
            warnings.warn(
                f"{self.name}: sha256 {self.sha256} differs from the published "
                f"{self.expected_sha256}; it may be another release or a damaged copy, so "
                "results on it are not comparable with ours",
                stacklevel=2,
            )
