"""Prepare pre-training data: text -> held-out split -> WordPiece vocab -> TFRecord examples.

    python data_scripts/prepare_pretraining_data.py                       # builtin corpus
    python data_scripts/prepare_pretraining_data.py --data-dir ../shared/data
    python data_scripts/prepare_pretraining_data.py --source hub --wikitext wikitext-103

Prints what it loaded (files, sizes, sha256, checksum status) and what it
wrote; re-running with the same inputs reuses every finished stage. The same
function is `mbert_lib.data.prepare_pretraining_data`.
"""

from __future__ import annotations

import argparse
import sys

from mbert_lib.data import DataError, PrepareSettings, prepare_pretraining_data
from mbert_lib.data.corpus import SOURCES
from mbert_lib.data.wikitext import NAMES, SPLITS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--source",
        choices=SOURCES,
        default="auto",
        help="auto: local if --data-dir or MBERT_DATA_DIR is given, else builtin",
    )
    p.add_argument("--data-dir", help="local copy in the original layouts (or MBERT_DATA_DIR)")
    p.add_argument("--output-dir", help="default: data/pretraining/<corpus> in the repository")
    p.add_argument("--wikitext", choices=NAMES, default="wikitext-2")
    p.add_argument(
        "--wikitext-splits",
        nargs="+",
        choices=SPLITS,
        help="default: train if present, else every split present",
    )
    p.add_argument("--no-sst2", action="store_true", help="leave out the SST-2 training sentences")
    p.add_argument("--vocab-file", help="use this BERT vocab.txt instead of training one")
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--no-lower-case", action="store_true", help="keep case (cased model)")
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--max-predictions-per-seq", type=int, default=20)
    p.add_argument("--masked-lm-prob", type=float, default=0.15)
    p.add_argument("--short-seq-prob", type=float, default=0.1)
    p.add_argument(
        "--dupe-factor",
        type=int,
        default=10,
        help="passes over the training text, each with new masks",
    )
    p.add_argument(
        "--eval-dupe-factor",
        type=int,
        default=1,
        help="passes over the held-out text (more masks, same text)",
    )
    p.add_argument(
        "--heldout-fraction",
        type=float,
        default=0.05,
        help="share of the words held out, as whole documents",
    )
    p.add_argument("--seed", type=int, default=12345)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        prepare_pretraining_data(
            PrepareSettings(
                args.source,
                args.data_dir,
                args.output_dir,
                wikitext_name=args.wikitext,
                wikitext_splits=args.wikitext_splits,
                include_sst2=not args.no_sst2,
                vocab_file=args.vocab_file,
                vocab_size=args.vocab_size,
                do_lower_case=not args.no_lower_case,
                seq_length=args.seq_length,
                max_predictions_per_seq=args.max_predictions_per_seq,
                masked_lm_prob=args.masked_lm_prob,
                short_seq_prob=args.short_seq_prob,
                dupe_factor=args.dupe_factor,
                eval_dupe_factor=args.eval_dupe_factor,
                heldout_fraction=args.heldout_fraction,
                seed=args.seed,
            )
        )
    except (DataError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
