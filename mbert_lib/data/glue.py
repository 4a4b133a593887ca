"""GLUE SST-2 (binary sentiment) from a local directory or the `datasets` hub.

Local layout (GLUE's own): `<data_dir>/glue/SST-2/` or `<data_dir>/SST-2/` with
    train.tsv, dev.tsv           header `sentence<TAB>label`, label 0 or 1
    test_labeled.tsv             the test sentences with labels (GLUE's own
                                 test.tsv has none)
Hub: `nyu-mll/glue`, config `sst2`, splits train / validation / test (the
hub's test labels are -1, i.e. hidden, so only train and dev load from it).

Splits are named "train", "dev", "test" for every source. Every example is
a (sentence, label) pair; a label outside {0, 1} is an error naming the file
and line (or the hub row).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from mbert_lib.data.errors import DataError
from mbert_lib.data.hub import load_hub_split

SST2_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test_labeled.tsv"}
HUB_PATH, HUB_CONFIG = "nyu-mll/glue", "sst2"
_HUB_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
LABELS = (0, 1)

Example = tuple[str, int]


def find_sst2_dir(data_dir: str | Path) -> Path:
    """`<data_dir>/glue/SST-2` or `<data_dir>/SST-2`, whichever exists."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"data directory {data_dir} does not exist")
    candidates = [data_dir / "glue" / "SST-2", data_dir / "SST-2"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"no SST-2 directory under {data_dir}; looked for {', '.join(map(str, candidates))}")


def _label(value: str, where: str) -> int:
    value = value.strip()
    if value not in ("0", "1"):
        raise DataError(f"{where}: label must be 0 or 1, got {value!r}")
    return int(value)


def read_sst2_tsv(path: str | Path) -> list[Example]:
    """(sentence, label) pairs of a GLUE-style TSV with `sentence` and `label` columns.

    Tab-separated, no quoting (as GLUE's reader does), first line the header.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e})") from e
    if not lines:
        raise DataError(f"{path}: empty file; expected the header 'sentence<TAB>label' and rows")
    header = [name.strip() for name in lines[0].split("\t")]
    if "sentence" not in header or "label" not in header:
        hint = (" (GLUE's own SST-2 test.tsv has no labels; use test_labeled.tsv)"
                if header == ["index", "sentence"] else "")
        raise DataError(f"{path}:1: expected the header 'sentence<TAB>label', "
                        f"got {lines[0]!r}{hint}")
    s_col, l_col = header.index("sentence"), header.index("label")
    examples = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataError(f"{path}:{number}: expected {len(header)} tab-separated fields "
                            f"({', '.join(header)}), got {len(fields)}")
        sentence = fields[s_col].strip()
        if not sentence:
            raise DataError(f"{path}:{number}: empty sentence")
        examples.append((sentence, _label(fields[l_col], f"{path}:{number}")))
    if not examples:
        raise DataError(f"{path}: has a header but no rows")
    return examples


def _hub_examples(split: str, loader: Optional[Callable]) -> list[Example]:
    label = f"hub {HUB_PATH}/{HUB_CONFIG} split {_HUB_SPLITS[split]}"
    rows = load_hub_split(HUB_PATH, HUB_CONFIG, _HUB_SPLITS[split], loader)
    examples = []
    for index, row in enumerate(rows):
        value = row["label"]
        if value == -1:
            raise DataError(f"{label}: row {index} has no label (-1): GLUE hides the test "
                            "labels; use 'dev', or a local test_labeled.tsv")
        examples.append((str(row["sentence"]).strip(), _label(str(value), f"{label} row {index}")))
    if not examples:
        raise DataError(f"{label}: no rows")
    return examples


def load_sst2(split: str = "train", source: str = "local", data_dir: str | Path | None = None,
              *, hub_loader: Optional[Callable] = None) -> list[Example]:
    """SST-2 `split` ("train", "dev" or "test") as a list of (sentence, label) pairs.

    source "local" reads `data_dir` (or MBERT_DATA_DIR); "hub" uses `datasets`
    (`hub_loader` replaces `datasets.load_dataset`, e.g. in tests). There is
    no builtin SST-2 yet.
    """
    from mbert_lib.data.corpus import resolve_data_dir

    if split not in SST2_FILES:
        raise DataError(f"unknown SST-2 split {split!r}; expected one of {tuple(SST2_FILES)}")
    if source == "hub":
        return _hub_examples(split, hub_loader)
    if source == "local":
        resolved = resolve_data_dir(data_dir)
        if resolved is None:
            raise DataError("SST-2 source 'local' needs a directory: pass data_dir "
                            "(--data-dir) or set MBERT_DATA_DIR")
        return read_sst2_tsv(find_sst2_dir(resolved) / SST2_FILES[split])
    raise DataError(f"unknown SST-2 source {source!r}; expected 'local' or 'hub' "
                    "(no builtin SST-2 yet)")
