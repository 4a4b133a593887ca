"""The prepare step: raw text -> held-out split -> WordPiece vocab -> TFRecord examples.

Everything goes under one output directory (default `data/pretraining/<corpus>`
at the repository root, ignored by git):

    corpus/train.txt, corpus/heldout.txt   the text, BERT's format (one sentence
                                           per line, blank line between documents)
    corpus/sources.json                    provenance: files, sizes, sha256
    tokenizer/vocab.txt, tokenizer_config.json, training.json
    examples/train.tfrecord, eval.tfrecord, manifest.json

Each stage is skipped when its inputs are unchanged (same text sha256, same
parameters): a finished stage is never redone. The held-out documents
(`heldout_fraction` of them, chosen by content hash) give the eval split used
for MLM accuracy / perplexity; they are not in the tokenizer's training text
or in the train examples.

While it reads or writes, a preparation holds `<output dir>/.lock` (mbert_lib.run_lock):
two runs sharing one cache (`data.cache_dir`) cannot mix their files. The second waits
its turn (seconds when the cache is already made) and is refused, naming the first, only
after CACHE_WAIT_SECONDS.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import tokenizers

from mbert_lib import atomic
from mbert_lib.data.corpus import load_pretraining_corpus, split_heldout
from mbert_lib.data.examples import (
    ExampleConfig,
    create_examples,
    example_statistics,
    tokenize_documents,
)
from mbert_lib.data.provenance import sha256_bytes
from mbert_lib.data.text import format_documents, parse_documents
from mbert_lib.data.tfrecord import build_examples_cache
from mbert_lib.data.tokenizer import WordPieceTokenizer, load_tokenizer, save_tokenizer
from mbert_lib.data.wordpiece_trainer import TRAINER_VERSION, train_wordpiece
from mbert_lib.experiment import DataSection
from mbert_lib.run_lock import run_lock
from mbert_lib.runtime import REPO_ROOT

DEFAULT_DATA_ROOT = REPO_ROOT / "data"
CACHE_WAIT_SECONDS = 900  # another run preparing into the same cache: wait, then refuse
TOKENIZER_MIN_FREQUENCY, TOKENIZER_LIMIT_ALPHABET = 2, 1000


@dataclasses.dataclass(frozen=True)
class PreparedData:
    """Where the prepare step put its outputs, and what it found or did."""

    output_dir: Path
    tokenizer_dir: Path
    examples_dir: Path
    manifest: dict  # examples/manifest.json
    reused: dict  # stage -> True when the cached result was reused
    seconds: dict  # stage -> wall time of this call

    def tokenizer(self) -> WordPieceTokenizer:
        return load_tokenizer(self.tokenizer_dir)


_EXAMPLES = ExampleConfig()  # the examples' defaults live there


@dataclasses.dataclass(frozen=True)
class PrepareSettings:
    """What `prepare_pretraining_data` prepares, and where.

    The corpus: `source`, `data_dir`, `wikitext_name`, `wikitext_splits` and
    `include_sst2` (see `load_pretraining_corpus`), of which `heldout_fraction` of the
    words are held out as whole documents. The tokenizer: the BERT vocab.txt
    `vocab_file` if given (`vocab_size` is then ignored), else one of `vocab_size`
    tokens trained on the text, lower-cased with `do_lower_case`. The examples: see
    `ExampleConfig` (`seq_length` ... `seed`); the eval examples use `eval_dupe_factor`
    passes and seed + 1. `output_dir`: default data/pretraining/<corpus> at the
    repository root.
    """

    source: str = "auto"
    data_dir: str | os.PathLike | None = None
    output_dir: str | os.PathLike | None = None
    wikitext_name: str = "wikitext-2"
    wikitext_splits: Sequence[str] | None = None
    include_sst2: bool = True
    vocab_file: str | os.PathLike | None = None
    vocab_size: int = DataSection.vocab_size
    do_lower_case: bool = DataSection.lower_case
    seq_length: int = _EXAMPLES.seq_length
    max_predictions_per_seq: int = _EXAMPLES.max_predictions_per_seq
    masked_lm_prob: float = _EXAMPLES.masked_lm_prob
    short_seq_prob: float = _EXAMPLES.short_seq_prob
    dupe_factor: int = _EXAMPLES.dupe_factor
    eval_dupe_factor: int = 1
    heldout_fraction: float = 0.05
    seed: int = _EXAMPLES.seed

    def example_config(self) -> ExampleConfig:
        """The train examples' ExampleConfig."""
        return ExampleConfig(
            self.seq_length,
            self.max_predictions_per_seq,
            self.masked_lm_prob,
            self.short_seq_prob,
            self.dupe_factor,
            self.seed,
        )


def _write_if_changed(path: Path, text: str) -> bool:
    """Writes `text` atomically unless the file already holds it; True if written."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    atomic.write_text(path, text)
    return True


def _tokenizer_stage(
    directory: Path, train_text: str, vocab_file, vocab_size: int, do_lower_case: bool
) -> tuple[WordPieceTokenizer, bool]:
    """The tokenizer in `directory`, reused when its training.json says it is the one asked
    for (a given vocabulary, or one trained on this text with these settings), else made
    and recorded: a directory shared by runs never keeps a vocabulary under the record of
    another."""
    given = load_tokenizer(vocab_file, do_lower_case) if vocab_file is not None else None
    if given is not None:
        key = {"given_vocab_sha256": given.sha256}
    else:
        key = {
            "train_text_sha256": sha256_bytes(train_text.encode("utf-8")),
            "vocab_size": vocab_size,
            "do_lower_case": do_lower_case,
            "min_frequency": TOKENIZER_MIN_FREQUENCY,
            "limit_alphabet": TOKENIZER_LIMIT_ALPHABET,
            "trainer_version": TRAINER_VERSION,
            "tokenizers_version": tokenizers.__version__,
        }
    record = directory / "training.json"
    if record.is_file() and json.loads(record.read_text(encoding="utf-8")) == key:
        return load_tokenizer(directory), True
    if record.is_file():
        record.unlink()
    tokenizer = given or train_wordpiece(
        train_text.split("\n"),
        vocab_size,
        do_lower_case,
        TOKENIZER_MIN_FREQUENCY,
        TOKENIZER_LIMIT_ALPHABET,
    )
    save_tokenizer(tokenizer, directory)
    atomic.write_text(record, json.dumps(key, indent=2) + "\n")
    return tokenizer, False


def prepare_pretraining_data(
    settings: PrepareSettings = PrepareSettings(),
    *,
    hub_loader: Callable | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
) -> PreparedData:
    """Runs (or reuses) every stage of `settings` and returns where the results are.

    hub_loader: see `load_pretraining_corpus`; log: where the stages report; progress:
    progress bars while the examples are made.
    """
    s = settings
    config = s.example_config()
    seconds, reused = {}, {}
    start = time.perf_counter()
    corpus = load_pretraining_corpus(
        s.source,
        s.data_dir,
        wikitext_name=s.wikitext_name,
        wikitext_splits=s.wikitext_splits,
        include_sst2=s.include_sst2,
        hub_loader=hub_loader,
    )
    log(corpus.describe())
    for file in corpus.files:
        file.warn_on_mismatch()
    output_dir = (
        Path(s.output_dir) if s.output_dir else DEFAULT_DATA_ROOT / "pretraining" / corpus.name
    )
    # One writer per cache directory: two runs preparing different data into it at once
    # would mix their files (a corpus of one, the examples of the other).
    with run_lock(output_dir, "data.cache_dir", wait=CACHE_WAIT_SECONDS):
        train_docs, heldout_docs = split_heldout(corpus.documents, s.heldout_fraction)
        train_text, heldout_text = format_documents(train_docs), format_documents(heldout_docs)
        written = [
            _write_if_changed(output_dir / "corpus" / name, text)
            for name, text in (("train.txt", train_text), ("heldout.txt", heldout_text))
        ]
        _write_if_changed(
            output_dir / "corpus" / "sources.json",
            json.dumps(
                {"corpus": corpus.name, "files": [dataclasses.asdict(f) for f in corpus.files]},
                indent=2,
            )
            + "\n",
        )
        reused["corpus"] = not any(written)
        seconds["corpus"] = time.perf_counter() - start
        log(
            f"held out {len(heldout_docs)} of {len(corpus.documents)} documents "
            f"({sum(map(len, heldout_docs)):,} sentences) -> {output_dir / 'corpus'}"
        )

        start = time.perf_counter()
        tokenizer_dir = output_dir / "tokenizer"
        tokenizer, reused["tokenizer"] = _tokenizer_stage(
            tokenizer_dir, train_text, s.vocab_file, s.vocab_size, s.do_lower_case
        )
        seconds["tokenizer"] = time.perf_counter() - start
        log(
            f"tokenizer: {tokenizer} ({'reused' if reused['tokenizer'] else 'written'}) "
            f"-> {tokenizer_dir}"
        )

        start = time.perf_counter()
        eval_config = dataclasses.replace(config, dupe_factor=s.eval_dupe_factor, seed=s.seed + 1)
        key = {
            "examples": config.to_dict(),
            "eval_examples": eval_config.to_dict(),
            "train_text_sha256": sha256_bytes(train_text.encode("utf-8")),
            "heldout_text_sha256": sha256_bytes(heldout_text.encode("utf-8")),
            "tokenizer_sha256": tokenizer.sha256,
        }

        def make_examples():
            splits = {}
            for split, text, cfg in (
                ("train", train_text, config),
                ("eval", heldout_text, eval_config),
            ):
                docs = tokenize_documents(tokenizer, parse_documents(text))
                splits[split] = create_examples(docs, tokenizer, cfg, progress=progress)
            extra = {
                "corpus": corpus.name,
                "seq_length": s.seq_length,
                "max_predictions_per_seq": s.max_predictions_per_seq,
                "vocab_size": tokenizer.vocab_size,
                "do_lower_case": tokenizer.do_lower_case,
                "statistics": {s: example_statistics(a, tokenizer) for s, a in splits.items()},
            }
            return splits, extra

        examples_dir = output_dir / "examples"
        manifest, reused["examples"] = build_examples_cache(examples_dir, key, make_examples)
        seconds["examples"] = time.perf_counter() - start
        for split in ("train", "eval"):
            stats = manifest["statistics"][split]
            size = (examples_dir / manifest["files"][split]).stat().st_size
            log(
                f"{split}: {stats['examples']:,} examples, {stats['tokens']:,} tokens "
                f"({stats['tokens'] / stats['examples'] / s.seq_length:.1%} of the slots filled), "
                f"{stats['predictions'] / stats['maskable']:.1%} of the maskable tokens predicted, "
                f"NSP random {stats['random_next'] / stats['examples']:.1%}, "
                f"{size / 1e6:.1f} MB ({'reused' if reused['examples'] else 'written'})"
            )
        log("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
        return PreparedData(output_dir, tokenizer_dir, examples_dir, manifest, reused, seconds)


def prepare_data_section(
    section, *, log: Callable[[str], None] = print, progress: bool = True
) -> PreparedData:
    """`prepare_pretraining_data` for an experiment's `data` section
    (`mbert_lib.experiment.DataSection`), field by field: what trainers and the pipeline's
    data step call, so that a setting reaches the examples under one name.
    """
    settings = PrepareSettings(
        source=section.source,
        data_dir=section.data_dir,
        output_dir=section.cache_dir,
        vocab_file=section.vocab_file,
        vocab_size=section.vocab_size,
        do_lower_case=section.lower_case,
        seq_length=section.seq_length,
        max_predictions_per_seq=section.max_predictions_per_seq,
        masked_lm_prob=section.masked_lm_prob,
        dupe_factor=section.dupe_factor,
        seed=section.seed,
    )
    return prepare_pretraining_data(settings, log=log, progress=progress)
