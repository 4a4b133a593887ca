"""Data for pre-training and fine-tuning: corpora, WordPiece, MLM/NSP examples, GLUE.

Sources (`source=`): "hub" (`datasets`, needs a network), "local" (a directory
in the original layouts, `--data-dir` / MBERT_DATA_DIR), "builtin" (the
standard library's docstrings, `load_builtin_corpus()`), "auto" (local if a
directory is known, else builtin). Modules, one idea each:

    text            the corpus text format and sentence splitting
    provenance      sha256 and the published checksums
    hub             `datasets` hub access with an offline-friendly error
    wikitext        WikiText files / hub rows -> documents
    glue            SST-2 (sentence, label) pairs
    builtin_corpus  the offline default corpus
    corpus          one `Corpus` from any source; held-out documents
    tokenizer       WordPiece: train, load a BERT vocab.txt, save beside a checkpoint
"""

from mbert_lib.data.builtin_corpus import builtin_documents, load_builtin_corpus
from mbert_lib.data.corpus import Corpus, load_pretraining_corpus, resolve_data_dir, split_heldout
from mbert_lib.data.errors import DataError
from mbert_lib.data.glue import load_sst2, read_sst2_tsv
from mbert_lib.data.text import format_documents, parse_documents, split_sentences
from mbert_lib.data.tokenizer import (SPECIAL_TOKENS, WordPieceTokenizer, load_tokenizer,
                                      save_tokenizer, train_wordpiece)

__all__ = [
    "builtin_documents", "load_builtin_corpus",
    "Corpus", "load_pretraining_corpus", "resolve_data_dir", "split_heldout",
    "DataError",
    "load_sst2", "read_sst2_tsv",
    "format_documents", "parse_documents", "split_sentences",
    "SPECIAL_TOKENS", "WordPieceTokenizer", "load_tokenizer", "save_tokenizer", "train_wordpiece",
]
