"""Held-out examples per source, for metrics a mixed corpus would blur.

The laptop corpus mixes WikiText articles with SST-2 pseudo-documents
(shuffled movie-review phrases, 100 per "document"). Next-sentence
prediction can only be learned on the articles: an SST-2 phrase's "next
sentence" is an unrelated phrase. On the mixed held-out split, NSP accuracy
is therefore capped well below 100%, and a "random" segment is mostly
recognisable by its style (most documents are SST-2) rather than its topic.

`heldout_examples_by_source` rebuilds held-out examples from the held-out
documents of one source at a time (same tokenizer, same masking and packing
as the prepare step; the random next segment then comes from another
held-out document *of the same source*), so NSP can be measured on
WikiText alone, where it is a real task.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mbert_lib.data.errors import DataError
from mbert_lib.data.examples import ExampleConfig, create_examples, tokenize_documents
from mbert_lib.data.text import Document, document_sha256, parse_documents
from mbert_lib.data.tfrecord import read_manifest
from mbert_lib.data.tokenizer import load_tokenizer


def partition_documents(
    documents: Sequence[Document], reference: Sequence[Document]
) -> tuple[list[Document], list[Document]]:
    """(documents that also occur in `reference`, the others), by content, order kept."""
    known = {document_sha256(d) for d in reference}
    inside = [d for d in documents if document_sha256(d) in known]
    return inside, [d for d in documents if document_sha256(d) not in known]


def heldout_examples_by_source(
    output_dir: str | os.PathLike,
    sources: Mapping[str, Sequence[Document]],
    rest: str = "rest",
    dupe_factor: int = 5,
    seed: int = 2024,
) -> dict[str, dict[str, np.ndarray]]:
    """{source name: example arrays} from a prepared directory's held-out documents.

    output_dir: what `prepare_pretraining_data` wrote (corpus/heldout.txt,
    tokenizer/, examples/manifest.json; its seq_length, max_predictions_per_seq
    and masked_lm_prob are reused). sources: name -> that source's documents
    (e.g. the WikiText documents); held-out documents found in none of them
    go under `rest`. A group with fewer than 2 held-out documents (NSP needs
    another document) is left out. dupe_factor passes give more examples
    (fresh masks and cuts) from the few held-out documents.
    """
    output_dir = Path(output_dir)
    heldout_path = output_dir / "corpus" / "heldout.txt"
    if not heldout_path.is_file():
        raise DataError(f"{heldout_path} does not exist: run the prepare step first")
    held = parse_documents(heldout_path.read_text(encoding="utf-8"))
    manifest = read_manifest(output_dir / "examples")
    eval_config = manifest["key"]["eval_examples"]
    config = ExampleConfig(
        eval_config["seq_length"],
        eval_config["max_predictions_per_seq"],
        eval_config["masked_lm_prob"],
        eval_config["short_seq_prob"],
        dupe_factor,
        seed,
    )
    tokenizer = load_tokenizer(output_dir / "tokenizer")
    groups: dict[str, list[Document]] = {}
    remaining = held
    for name, documents in sources.items():
        groups[name], remaining = partition_documents(remaining, documents)
    groups[rest] = remaining
    return {
        name: create_examples(tokenize_documents(tokenizer, docs), tokenizer, config)
        for name, docs in groups.items()
        if len(docs) >= 2
    }
