"""`python -m mbert_lib bench distill`: distillation step throughput (layer-wise and PD).

With --anchor_python, tensorflow/models' BertDistillationTask on the same problem
is timed in the same run (mbert_lib.bench.anchor): `--rounds` rounds, each ours
then the anchor, and the per-round ratios ours / anchor with their median.
"""

import json
import os

from mbert_lib import atomic
from mbert_lib.bench import anchor as tf_models_anchor
from mbert_lib.bench.timing import write_json
from mbert_lib.cli._args import (
    check_predictions,
    check_seq_length,
    nonnegative_int,
    output_file,
    positive_int,
)
from mbert_lib.config import get_preset
from mbert_lib.hardware import cpu_info

HELP = "measure distillation steps/s and tokens/s (layer-wise FMT + AT, and PD)"
DEFAULT_ROUNDS = 3


def add_arguments(parser) -> None:
    parser.add_argument("--teacher", default="tiny_teacher", help="teacher preset")
    parser.add_argument("--student", default="tiny_student", help="student preset")
    parser.add_argument(
        "--embedding_size",
        type=positive_int,
        default=64,
        help="token embedding width E of both models (default %(default)s, the "
        "benchmark problem against tf-models; the laptop presets use 32)",
    )
    parser.add_argument("--seq_length", type=positive_int, default=128)
    parser.add_argument("--batch_size", type=positive_int, default=32)
    parser.add_argument("--max_predictions_per_seq", type=positive_int, default=20)
    parser.add_argument("--repeats", type=positive_int, default=20, help="timed steps per variant")
    parser.add_argument(
        "--warmup", type=nonnegative_int, default=3, help="untimed steps per variant"
    )
    parser.add_argument("--mixed_precision", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--jit_compile", action="store_true", help="compile the step with XLA")
    parser.add_argument(
        "--anchor_python",
        help="Python of the tf-models venv (experiments/tf_models_anchor/"
        "README.md): also time tf-models' BertDistillationTask, same run",
    )
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help=f"with --anchor_python: rounds of ours then the anchor (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument("--json", type=output_file, help="write the records to this JSON file")


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.bench.distill import distill_rounds

    if args.anchor_python is None and args.rounds is not None:
        raise ValueError("--rounds needs --anchor_python (rounds alternate ours and the anchor)")
    teacher, student = (
        get_preset(name).replace(embedding_size=args.embedding_size)
        for name in (args.teacher, args.student)
    )
    check_seq_length(args.seq_length, {args.teacher: teacher, args.student: student})
    check_predictions(args)
    if args.anchor_python is not None:
        return _run_with_anchor(args, teacher, student)
    records = next(
        distill_rounds(
            teacher,
            student,
            args.seq_length,
            args.batch_size,
            args.max_predictions_per_seq,
            args.repeats,
            args.warmup,
            args.mixed_precision,
            args.jit_compile,
        )
    )
    for r in records:
        r.update(teacher=args.teacher, student=args.student, embedding_size=args.embedding_size)
        print(_line(r))
    if args.json:
        write_json(records, args.json)
    return 0


def _line(r: dict) -> str:
    return (
        f"{r['variant']:<17} {r['median_step_ms']:8.1f} ms/step  "
        f"{r['steps_per_second']:6.2f} steps/s  {r['tokens_per_second']:9,.0f} tokens/s  "
        f"{r['gflop_per_step']:5.1f} GFLOP/step = {r['gflop_per_second']:5.1f} GFLOP/s"
    )


def _run_with_anchor(args, teacher, student) -> int:

    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.bench.distill import distill_rounds

    rounds = DEFAULT_ROUNDS if args.rounds is None else args.rounds
    if rounds < 1:
        raise ValueError(f"--rounds must be >= 1, got {rounds}")
    if args.mixed_precision != "float32":
        raise ValueError(
            "the tf-models anchor runs float32: compare with --mixed_precision "
            f"float32, got {args.mixed_precision}"
        )
    tf_models_anchor.check_anchor(args.anchor_python)  # fail before building anything
    config = {
        "teacher": teacher.to_dict(),
        "student": student.to_dict(),
        "seq_length": args.seq_length,
        "batch_size": args.batch_size,
        "max_predictions_per_seq": args.max_predictions_per_seq,
    }
    load_start = list(os.getloadavg())
    ours_rounds = distill_rounds(
        teacher,
        student,
        args.seq_length,
        args.batch_size,
        args.max_predictions_per_seq,
        args.repeats,
        args.warmup,
        args.mixed_precision,
        args.jit_compile,
    )
    ours, anchor = [], []
    for r in range(rounds):
        ours.append({x["variant"]: x for x in next(ours_rounds)})
        print(f"round {r + 1}/{rounds} ours:   " + _tokens(ours[-1]), flush=True)
        anchor.append(
            tf_models_anchor.run_anchor(args.anchor_python, config, args.repeats, args.warmup)
        )
        print(f"round {r + 1}/{rounds} anchor: " + _tokens(anchor[-1]), flush=True)
    load_end = list(os.getloadavg())
    comparison = tf_models_anchor.compare_rounds(ours, anchor)
    for c in comparison:
        print(
            f"{c['variant']:<17} ours {c['ours_median_tokens_per_second']:9,.0f} tokens/s  "
            f"tf-models {c['anchor_median_tokens_per_second']:9,.0f} tokens/s  ratio per "
            f"round {' '.join(f'{x:.2f}' for x in c['ratio_per_round'])}  "
            f"median {c['median_ratio']:.2f}x"
        )
    print(f"load average (1, 5, 15 min): start {load_start}, end {load_end}")
    if args.json:
        result = {
            "teacher": args.teacher,
            "student": args.student,
            "embedding_size": args.embedding_size,
            "rounds": rounds,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "jit_compile": args.jit_compile,
            "mixed_precision": args.mixed_precision,
            "hardware": cpu_info(),
            "load_average_start": load_start,
            "load_average_end": load_end,
            "comparison": comparison,
            "ours": [list(x.values()) for x in ours],
            "anchor": [list(x.values()) for x in anchor],
        }
        atomic.write_text(args.json, json.dumps(result, indent=2, allow_nan=False) + "\n")
    return 0


def _tokens(records: dict) -> str:
    return "  ".join(f"{v} {r['tokens_per_second']:,.0f} tokens/s" for v, r in records.items())
