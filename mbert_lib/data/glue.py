"""GLUE tasks (SST-2, CoLA, MRPC, RTE, STS-B) from a local directory or the `datasets` hub.

Local layout (GLUE's own): `<data_dir>/glue/<TASK>/` or `<data_dir>/<TASK>/` with

    task   directory  columns of train.tsv / dev.tsv               label
    sst2   SST-2      header `sentence<TAB>label`                   0 / 1
    cola   CoLA       no header: source, label, original label, sentence   0 / 1
    mrpc   MRPC       header `Quality  #1 ID  #2 ID  #1 String  #2 String`  0 / 1 (Quality)
    rte    RTE        header `index  sentence1  sentence2  label`    entailment / not_entailment
    stsb   STS-B      header `index genre ... sentence1 sentence2 score`  a number in [0, 5]

plus an optional `test_labeled.tsv` in the same format (GLUE's own test.tsv
files have no labels). Files are tab-separated without quoting, as GLUE's
own reader reads them. Hub: `nyu-mll/glue`, the task's config, splits
train / validation / test (test labels are -1, i.e. hidden).

Splits are named "train", "dev", "test" for every source. Every example is
a `GlueExample(text_a, text_b, label)`: text_b is None for single-sentence
tasks; the label is the class id (the position of the raw label in the
task's `labels`, the hub's ids) or, for STS-B, a float. A label outside the
task's classes is an error naming the file and line (or the hub row), and so
is a classification task's training split whose examples all have one label.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from mbert_lib.data.data_dir import resolve_data_dir
from mbert_lib.data.errors import DataError
from mbert_lib.data.hub import OFFLINE_TASK, load_hub_split
from mbert_lib.data.text import read_text

HUB_PATH = "nyu-mll/glue"
SPLIT_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test_labeled.tsv"}
_HUB_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
Column = str | int  # a header name, or a field index in a file without a header


class GlueExample(NamedTuple):
    text_a: str
    text_b: str | None
    label: int | float


@dataclasses.dataclass(frozen=True)
class GlueFormat:
    """Where one GLUE task's files are and how their columns read."""

    directory: str  # e.g. "SST-2"
    hub_config: str  # e.g. "sst2"
    text_columns: tuple[Column, ...]  # one (single sentence) or two (pair) columns
    label_column: Column
    labels: tuple[str, ...] | None  # raw label strings, id = position; None: regression
    num_fields: int | None = None  # files without a header: fields per row
    label_range: tuple[float, float] = (0.0, 5.0)  # regression only
    hub_text_columns: tuple[str, ...] = ("sentence",)

    @property
    def has_header(self) -> bool:
        return self.num_fields is None


FORMATS = {
    "sst2": GlueFormat("SST-2", "sst2", ("sentence",), "label", ("0", "1")),
    "cola": GlueFormat("CoLA", "cola", (3,), 1, ("0", "1"), num_fields=4),
    "mrpc": GlueFormat(
        "MRPC",
        "mrpc",
        ("#1 String", "#2 String"),
        "Quality",
        ("0", "1"),
        hub_text_columns=("sentence1", "sentence2"),
    ),
    "rte": GlueFormat(
        "RTE",
        "rte",
        ("sentence1", "sentence2"),
        "label",
        ("entailment", "not_entailment"),
        hub_text_columns=("sentence1", "sentence2"),
    ),
    "stsb": GlueFormat(
        "STS-B",
        "stsb",
        ("sentence1", "sentence2"),
        "score",
        None,
        hub_text_columns=("sentence1", "sentence2"),
    ),
}

# SST-2 names kept for the pre-training corpus (mbert_lib.data.corpus).
SST2_FILES = SPLIT_FILES
HUB_CONFIG = FORMATS["sst2"].hub_config
Example = tuple[str, int]


def get_format(task: str) -> GlueFormat:
    if task not in FORMATS:
        raise DataError(f"unknown GLUE task {task!r}; expected one of {sorted(FORMATS)}")
    return FORMATS[task]


def find_task_dir(data_dir: str | Path, directory: str) -> Path:
    """`<data_dir>/glue/<directory>` or `<data_dir>/<directory>`, whichever exists."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"data directory {data_dir} does not exist")
    candidates = [data_dir / "glue" / directory, data_dir / directory]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"no {directory} directory under {data_dir}; looked for {', '.join(map(str, candidates))}"
    )


def find_sst2_dir(data_dir: str | Path) -> Path:
    return find_task_dir(data_dir, FORMATS["sst2"].directory)


def parse_label(value, fmt: GlueFormat, where: str) -> int | float:
    """The class id (or the score) of a raw label; DataError naming `where` otherwise."""
    text = str(value).strip()
    if fmt.labels is None:
        low, high = fmt.label_range
        try:
            score = float(text)
        except ValueError:
            score = float("nan")
        if not low <= score <= high:
            raise DataError(f"{where}: label must be a number in [{low:g}, {high:g}], got {text!r}")
        return score
    if text not in fmt.labels:
        names = " or ".join(fmt.labels) if len(fmt.labels) == 2 else ", ".join(fmt.labels)
        raise DataError(f"{where}: label must be {names}, got {text!r}")
    return fmt.labels.index(text)


def _column_indices(header: list[str], fmt: GlueFormat, path: Path, first_line: str):
    wanted = [*fmt.text_columns, fmt.label_column]
    missing = [c for c in wanted if c not in header]
    if missing:
        hint = (
            " (GLUE's own test.tsv has no labels; use test_labeled.tsv)"
            if "label" not in header and fmt.label_column not in header
            else ""
        )
        raise DataError(
            f"{path}:1: expected the header {'<TAB>'.join(map(str, wanted))} "
            f"(columns {missing} missing), got {first_line!r}{hint}"
        )
    return [header.index(c) for c in fmt.text_columns], header.index(fmt.label_column)


def read_glue_tsv(path: str | Path, fmt: GlueFormat) -> list[GlueExample]:
    """The examples of one GLUE-layout TSV file of the task `fmt` describes."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    lines = read_text(path).splitlines()
    if not lines:
        raise DataError(
            f"{path}: empty file; expected " + ("a header and rows" if fmt.has_header else "rows")
        )
    if fmt.has_header:
        header = [name.strip() for name in lines[0].split("\t")]
        text_cols, label_col = _column_indices(header, fmt, path, lines[0])
        num_fields, first, names = len(header), 2, ", ".join(header)
    else:
        text_cols, label_col = list(fmt.text_columns), fmt.label_column
        num_fields, first, names = fmt.num_fields, 1, "no header"
    examples = []
    for number, line in enumerate(lines[first - 1 :], start=first):
        fields = line.split("\t")
        if len(fields) != num_fields:
            raise DataError(
                f"{path}:{number}: expected {num_fields} tab-separated fields "
                f"({names}), got {len(fields)}"
            )
        texts = [fields[i].strip() for i in text_cols]
        if not all(texts):
            raise DataError(f"{path}:{number}: empty sentence")
        examples.append(
            GlueExample(
                texts[0],
                texts[1] if len(texts) > 1 else None,
                parse_label(fields[label_col], fmt, f"{path}:{number}"),
            )
        )
    if not examples:
        raise DataError(f"{path}: has a header but no rows")
    return examples


def _hub_examples(fmt: GlueFormat, split: str, loader: Callable | None) -> list[GlueExample]:
    label = f"hub {HUB_PATH}/{fmt.hub_config} split {_HUB_SPLITS[split]}"
    rows = load_hub_split(HUB_PATH, fmt.hub_config, _HUB_SPLITS[split], loader, OFFLINE_TASK)
    examples = []
    for index, row in enumerate(rows):
        value = row["label"]
        if value == -1:
            raise DataError(
                f"{label}: row {index} has no label (-1): GLUE hides the test "
                "labels; use 'dev', or a local test_labeled.tsv"
            )
        texts = [str(row[c]).strip() for c in fmt.hub_text_columns]
        where = f"{label} row {index}"
        if fmt.labels is not None:  # the hub stores class ids; check them against the classes
            if str(value) not in map(str, range(len(fmt.labels))):
                raise DataError(
                    f"{where}: label must be a class id in 0..{len(fmt.labels) - 1}, got {value!r}"
                )
            value = fmt.labels[int(value)]
        examples.append(
            GlueExample(
                texts[0], texts[1] if len(texts) > 1 else None, parse_label(value, fmt, where)
            )
        )
    if not examples:
        raise DataError(f"{label}: no rows")
    return examples


def load_glue(
    task: str,
    split: str = "train",
    source: str = "local",
    data_dir: str | Path | None = None,
    *,
    hub_loader: Callable | None = None,
) -> list[GlueExample]:
    """GLUE `task`'s `split` ("train", "dev" or "test") as a list of GlueExample.

    source "local" reads `data_dir` (or MBERT_DATA_DIR); "hub" uses `datasets`
    (`hub_loader` replaces `datasets.load_dataset`, e.g. in tests).
    """
    fmt = get_format(task)
    if split not in SPLIT_FILES:
        raise DataError(
            f"unknown {fmt.directory} split {split!r}; expected one of {tuple(SPLIT_FILES)}"
        )
    if source == "hub":
        examples = _hub_examples(fmt, split, hub_loader)
        where = f"hub {HUB_PATH}/{fmt.hub_config} split {_HUB_SPLITS[split]}"
    elif source == "local":
        resolved = resolve_data_dir(data_dir)
        if resolved is None:
            raise DataError(
                f"{fmt.directory} source 'local' needs a directory: pass data_dir "
                "(--data-dir) or set MBERT_DATA_DIR"
            )
        path = find_task_dir(resolved, fmt.directory) / SPLIT_FILES[split]
        examples, where = read_glue_tsv(path, fmt), str(path)
    else:
        raise DataError(
            f"unknown {fmt.directory} source {source!r}; expected 'local' or 'hub' "
            "(GLUE has no builtin copy; the offline labeled task is 'builtin_shuffled')"
        )
    if split == "train":
        check_classes(examples, fmt, where)
    return examples


def check_classes(examples: list[GlueExample], fmt: GlueFormat, where: str) -> None:
    """DataError when every training example of a classification task has one label: a
    classifier trained on it learns to answer that label whatever the sentence, and its
    dev accuracy would only be that label's share. Such a file is a broken one (a label
    column overwritten, the rows of one class only), not a task."""
    if fmt.labels is None or len({e.label for e in examples}) > 1:
        return
    raise DataError(
        f"{where}: all {len(examples):,} training examples have the label "
        f"{fmt.labels[examples[0].label]!r}; a classifier needs examples of more than one "
        f"of {fmt.directory}'s classes {list(fmt.labels)} to learn from (is this the task's "
        "whole training set?)"
    )


def read_sst2_tsv(path: str | Path) -> list[Example]:
    """(sentence, label) pairs of an SST-2 TSV file (header `sentence<TAB>label`)."""
    return [(e.text_a, e.label) for e in read_glue_tsv(path, FORMATS["sst2"])]


def load_sst2(
    split: str = "train",
    source: str = "local",
    data_dir: str | Path | None = None,
    *,
    hub_loader: Callable | None = None,
) -> list[Example]:
    """SST-2 `split` as (sentence, label) pairs; see `load_glue`."""
    return [
        (e.text_a, e.label)
        for e in load_glue("sst2", split, source, data_dir, hub_loader=hub_loader)
    ]
