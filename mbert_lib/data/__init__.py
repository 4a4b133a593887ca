"""Data for pre-training and fine-tuning: corpora, WordPiece, MLM/NSP examples, GLUE.

Pre-training, from text to batches:

    prepared = prepare_pretraining_data(PrepareSettings(source="auto"))   # or the script
    train = make_pretraining_dataset(prepared.examples_dir, batch_size=32)
    held_out = make_pretraining_dataset(prepared.examples_dir, 32, split="eval")
    check_model_compatibility(config, examples_dir=prepared.examples_dir)

Sources (`PrepareSettings.source`): "hub" (`datasets`, needs a network), "local" (a directory
in the original layouts, `--data-dir` / MBERT_DATA_DIR), "builtin" (the
standard library's docstrings, `load_builtin_corpus()`), "auto" (local if a
directory is known, else builtin). Modules, one idea each:

    text            the corpus text format and sentence splitting
    provenance      sha256 and the published checksums
    hub             `datasets` hub access with an offline-friendly error
    wikitext        WikiText files / hub rows -> documents
    glue            SST-2 (sentence, label) pairs
    builtin_corpus  the offline default corpus
    data_dir        where local data lives (--data-dir, else $MBERT_DATA_DIR)
    corpus          one `Corpus` from any source; held-out documents
    tokenizer       WordPiece: tokenize, load a BERT vocab.txt, save beside a checkpoint
    wordpiece_trainer  learning a vocabulary (deterministically) with `tokenizers`
    examples        BERT's MLM + NSP example creation (static masking)
    tfrecord        examples on disk, the cache manifest
    pipeline        the tf.data pipeline and the model-compatibility check
    prepare         the prepare step tying them together
    heldout         held-out examples rebuilt per source (e.g. NSP on WikiText alone)
    example_view    one example token by token, [MASK] / random / kept marked
    structured_task a generated induction language for the attention lab (mbert_lib.lab)
"""

from mbert_lib.data.builtin_corpus import builtin_documents, load_builtin_corpus
from mbert_lib.data.corpus import Corpus, load_pretraining_corpus, split_heldout
from mbert_lib.data.data_dir import DATA_DIR_ENV, resolve_data_dir
from mbert_lib.data.errors import DataError
from mbert_lib.data.examples import (
    FEATURES,
    ExampleConfig,
    create_examples,
    example_statistics,
    original_tokens,
    tokenize_documents,
)
from mbert_lib.data.glue import load_sst2, read_sst2_tsv
from mbert_lib.data.pipeline import (
    SplitReading,
    check_model_compatibility,
    make_pretraining_dataset,
)
from mbert_lib.data.prepare import (
    PreparedData,
    PrepareSettings,
    prepare_data_section,
    prepare_pretraining_data,
)
from mbert_lib.data.text import format_documents, parse_documents, split_sentences
from mbert_lib.data.tfrecord import read_manifest, read_tfrecord, write_tfrecord
from mbert_lib.data.tokenizer import (
    SPECIAL_TOKENS,
    WordPieceTokenizer,
    load_tokenizer,
    save_tokenizer,
)
from mbert_lib.data.wordpiece_trainer import train_wordpiece

__all__ = [
    "builtin_documents",
    "load_builtin_corpus",
    "Corpus",
    "load_pretraining_corpus",
    "split_heldout",
    "DATA_DIR_ENV",
    "resolve_data_dir",
    "DataError",
    "FEATURES",
    "ExampleConfig",
    "create_examples",
    "example_statistics",
    "original_tokens",
    "tokenize_documents",
    "load_sst2",
    "read_sst2_tsv",
    "check_model_compatibility",
    "make_pretraining_dataset",
    "SplitReading",
    "PreparedData",
    "PrepareSettings",
    "prepare_data_section",
    "prepare_pretraining_data",
    "format_documents",
    "parse_documents",
    "split_sentences",
    "read_manifest",
    "read_tfrecord",
    "write_tfrecord",
    "SPECIAL_TOKENS",
    "WordPieceTokenizer",
    "load_tokenizer",
    "save_tokenizer",
    "train_wordpiece",
]
