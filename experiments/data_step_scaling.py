"""The data step's time against the corpus size: linear from 1x to 8x, and one huge line.

    python experiments/data_step_scaling.py [--sizes 1,2,4,8] [--repeats 5]
        [--dupe_factor 5] [--out results/data_step_scaling.json]

The corpus of size k is k copies of the built-in corpus (530 documents, 1.1 M
characters), each copy with the words of every sentence shuffled by its own
seed, so that no copy repeats another's text. It is written as a WikiText
file and prepared from scratch by `prepare_pretraining_data` (corpus,
WordPiece tokenizer, tokenization, BERT's example packing and masking,
TFRecords) into a fresh directory. Sizes are timed in interleaved rounds;
the JSON holds each size's median seconds (per stage too), the ratio
median(k) / (k * median(1)) (1.0 is exactly linear) and the hardware.

Two single-line cases follow, each prepared once: the built-in corpus plus one
line just under the line limit (MAX_LINE_CHARS characters), which is packed
and truncated like any other; and a file of one 30 MB line, which is refused
(its seconds: the time to the refusal).
"""

import argparse
import json
import random
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from mbert_lib.data.builtin_corpus import builtin_documents
from mbert_lib.data.errors import DataError
from mbert_lib.data.prepare import PrepareSettings, prepare_pretraining_data
from mbert_lib.data.text import MAX_LINE_CHARS
from mbert_lib.hardware import cpu_info


def wikitext_file(path: Path, copies: int, extra_line: str = "") -> int:
    """Writes `copies` word-shuffled copies of the built-in corpus as WikiText; its bytes."""
    documents, lines = builtin_documents(), []
    for copy in range(copies):
        rng = random.Random(copy)
        for index, document in enumerate(documents):
            lines.append(f" = Document {copy}.{index} = ")
            for sentence in document:
                words = sentence.split()
                if copy:
                    rng.shuffle(words)
                lines.append(" ".join(words))
    if extra_line:
        lines += [" = One long line = ", extra_line]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path.stat().st_size


def prepare(data_dir: Path, dupe_factor: int) -> dict:
    """Seconds of one from-scratch data step over data_dir (in all and per stage)."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        prepared = prepare_pretraining_data(
            PrepareSettings(
                "local",
                data_dir,
                out,
                include_sst2=False,
                wikitext_splits=["valid"],
                dupe_factor=dupe_factor,
            ),
            log=lambda _: None,
            progress=False,
        )
        total = time.perf_counter() - start
    return {
        "total": total,
        **{k: round(v, 3) for k, v in prepared.seconds.items()},
        "train_examples": prepared.manifest["statistics"]["train"]["examples"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--out", default="results/data_step_scaling.json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*differs from the published")  # not WikiText
    sizes = [int(k) for k in args.sizes.split(",")]

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        corpus_bytes = {
            k: wikitext_file(work / f"x{k}" / "wikitext-2" / "valid.txt", k) for k in sizes
        }
        runs = {k: [] for k in sizes}
        for round_ in range(args.repeats):
            for k in sizes:
                runs[k].append(prepare(work / f"x{k}", args.dupe_factor))
                print(
                    f"round {round_ + 1}/{args.repeats} size {k}x: {runs[k][-1]['total']:.1f} s",
                    flush=True,
                )

        rng = random.Random(0)
        words = [w for d in builtin_documents() for s in d for w in s.split()]
        long_line = ""
        while len(long_line) < MAX_LINE_CHARS - 1000:
            long_line += " ".join(rng.choices(words, k=1000)) + " "
        long_line = long_line[: MAX_LINE_CHARS - 1000].strip()
        wikitext_file(work / "long" / "wikitext-2" / "valid.txt", 1, extra_line=long_line)
        at_limit = prepare(work / "long", args.dupe_factor)
        print(
            f"built-in corpus + one {len(long_line):,}-character line: {at_limit['total']:.1f} s",
            flush=True,
        )

        huge = work / "huge" / "wikitext-2" / "valid.txt"
        huge.parent.mkdir(parents=True)
        huge.write_text(" = One line = \n" + ("word " * 6_000_000) + "\n", encoding="utf-8")
        start = time.perf_counter()
        try:
            prepare(work / "huge", args.dupe_factor)
            refusal = "not refused"
        except DataError as e:
            refusal = str(e).replace(str(work), "<tmp>")
        refused_seconds = time.perf_counter() - start
        print(f"one 30 MB line: {refused_seconds:.2f} s: {refusal}", flush=True)

    medians = {
        k: {
            stage: statistics.median(r[stage] for r in runs[k])
            for stage in runs[k][0]
            if stage != "train_examples"
        }
        for k in sizes
    }
    base = medians[sizes[0]]["total"] / sizes[0]
    result = {
        "what": "prepare_pretraining_data from scratch on k word-shuffled copies of the "
        "built-in corpus (WikiText layout, no SST-2); medians over interleaved rounds",
        "command": "python experiments/data_step_scaling.py",
        "hardware": cpu_info(),
        "repeats": args.repeats,
        "dupe_factor": args.dupe_factor,
        "sizes": {
            str(k): {
                "corpus_bytes": corpus_bytes[k],
                "train_examples": runs[k][0]["train_examples"],
                "median_seconds": {s: round(v, 3) for s, v in medians[k].items()},
                "seconds": [round(r["total"], 3) for r in runs[k]],
                "ratio_to_linear": round(medians[k]["total"] / (k * base), 3),
            }
            for k in sizes
        },
        "line_at_the_limit": {
            "line_chars": len(long_line),
            "seconds": round(at_limit["total"], 3),
            "train_examples": at_limit["train_examples"],
        },
        "line_of_30_mb": {"seconds_to_refusal": round(refused_seconds, 3), "message": refusal},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
