"""`python -m mbert_lib export tflite`: a checkpoint to a .tflite file at one precision."""

import os
import tempfile

from mbert_lib.cli import CommandError
from mbert_lib.config import MobileBertConfig
from mbert_lib.export.tflite_metadata import check_metadata_target, support_python

HELP = (
    "convert a model directory or checkpoint (mbert_lib.checkpoints) to TFLite at "
    "fp32 / dynamic_int8 / float16 / int8"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a model directory, a training directory (its latest checkpoint) "
        "or a checkpoint prefix (see mbert_lib/checkpoints.py)",
    )
    parser.add_argument(
        "--config",
        default=None,
        help="bert_config.json of the model (default: the one beside the "
        "checkpoint; if both exist they must agree)",
    )
    parser.add_argument(
        "--precision", required=True, choices=("fp32", "dynamic_int8", "float16", "int8")
    )
    parser.add_argument(
        "--seq_length",
        type=int,
        default=128,
        help="sequence length T (with --dynamic_shape: of the int8 calibration set only)",
    )
    parser.add_argument(
        "--dynamic_shape",
        action="store_true",
        help="leave batch and length open ([-1, -1]): the interpreter can "
        "resize the inputs at run time (default: fixed [1, T])",
    )
    parser.add_argument("--output", required=True, help="the .tflite file to write")
    parser.add_argument(
        "--model",
        choices=("encoder", "classifier"),
        default="encoder",
        help="export the encoder (sequence_output, pooled_output) or the "
        "classifier (logits); default: encoder",
    )
    parser.add_argument(
        "--calibration",
        default=None,
        help="int8 only: an .npz of tokenized examples (input_word_ids, "
        "input_mask, input_type_ids, each [n, seq_length]) to calibrate "
        "activation ranges; real sentences, not the evaluation set",
    )
    parser.add_argument(
        "--calibration_limit",
        type=int,
        default=200,
        help="int8 only: at most this many calibration examples",
    )
    parser.add_argument(
        "--int8_mask_penalty",
        default="20",
        help="int8 only: attention masks padded keys with scores*m - c*(1-m), "
        "c = this (int8 cannot hold the model's -1e9); 'none' keeps -1e9; "
        "default: %(default)s",
    )
    parser.add_argument(
        "--metadata",
        action="store_true",
        help="classifiers: output the probabilities and pack TFLite metadata "
        "(vocabulary, labels, inputs) for the Task Library's "
        "BertNLClassifier; needs tflite-support in its own venv "
        "(docs/exports.md)",
    )
    parser.add_argument(
        "--metadata_python",
        default=None,
        help="with --metadata: the Python that has tflite-support (default: "
        "the repository's .venv-tflite-support)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    parser.add_argument(
        "--random_calibration",
        action="store_true",
        help="int8 only: calibrate on random token ids (smoke tests only: "
        "ranges from random ids do not match real text)",
    )


def run(args) -> int:
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.checkpoints import load_config, load_model
    from mbert_lib.export import tflite, tflite_metadata

    _check_arguments(args)
    labels = _metadata_labels(args) if args.metadata else None
    config = load_config(
        args.checkpoint, MobileBertConfig.from_json_file(args.config) if args.config else None
    )
    if args.seq_length > config.max_position_embeddings:
        raise CommandError(
            f"--seq_length {args.seq_length} exceeds max_position_embeddings "
            f"= {config.max_position_embeddings} of the model's config"
        )
    penalty = _mask_penalty(args.int8_mask_penalty)
    dataset = _calibration_dataset(args, config) if args.precision == "int8" else None
    model = load_model(args.checkpoint, args.model, config)
    export = dict(
        int8=tflite.Int8Options(dataset, penalty),
        dynamic_shape=args.dynamic_shape,
        probabilities=args.metadata,
    )
    size = _write_tflite(args, model, labels, export)
    shape = "[any, any]" if args.dynamic_shape else f"[1, {args.seq_length}]"
    what = (
        f"classifier of {list(labels.names)} with BertNLClassifier metadata"
        if args.metadata
        else args.model
    )
    print(f"wrote {args.output}: {what}, {args.precision}, inputs {shape}, {size / 1e6:.2f} MB")
    if args.metadata:
        print(f"note: {tflite_metadata.ACCENTS_NOTE}")
    return 0


def _check_arguments(args) -> None:
    """Raises CommandError for arguments that are wrong on their own or together, before
    anything is read."""
    if args.seq_length < 1:
        raise CommandError(f"--seq_length must be positive, got {args.seq_length}")
    if os.path.isdir(args.output):
        raise CommandError(f"--output {args.output} is a directory; expected a .tflite file path")
    if os.path.exists(args.output) and not args.overwrite:
        raise CommandError(f"{args.output} already exists (use --overwrite)")
    if args.precision != "int8" and (args.calibration or args.random_calibration):
        raise CommandError(
            f"--calibration and --random_calibration are for --precision int8 "
            f"(the activation ranges of full-integer models); {args.precision} "
            "needs none"
        )
    if args.metadata_python and not args.metadata:
        raise CommandError("--metadata_python is for --metadata")


def _mask_penalty(text: str) -> float | None:
    """The --int8_mask_penalty value: None for 'none', else the checked number;
    CommandError if it is neither."""
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.export import inference

    if text.lower() == "none":
        return None
    try:
        penalty = float(text)
    except ValueError:
        raise CommandError(
            f"--int8_mask_penalty must be a number or 'none', got {text!r}"
        ) from None
    inference.check_mask_penalty(penalty, "--int8_mask_penalty")
    return penalty


def _calibration_dataset(args, config: MobileBertConfig):
    """The int8 representative dataset: --calibration's examples, or random ids with
    --random_calibration; CommandError without either or for a file that does not fit."""
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.export import representative

    if args.calibration:
        try:
            features = representative.load_features(args.calibration, args.seq_length)
        except ValueError as e:
            raise CommandError(f"--calibration {e}") from None
    elif args.random_calibration:
        features = representative.random_features(
            args.calibration_limit, args.seq_length, config.vocab_size, config.type_vocab_size
        )
    else:
        raise CommandError(
            "--precision int8 needs --calibration FILE.npz "
            "(or --random_calibration for a smoke test)"
        )
    return representative.representative_dataset(features, args.calibration_limit)


def _write_tflite(args, model, labels, export: dict) -> int:
    """Writes --output: the converted model (`export`: export_tflite's keyword arguments),
    with --metadata converted to a temporary file and packed with `labels` and the
    vocabulary; returns the size of --output in bytes."""
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.convert.hf import vocab_beside
    from mbert_lib.export import tflite, tflite_metadata

    if not args.metadata:
        return tflite.export_tflite(model, args.output, args.precision, args.seq_length, **export)
    with tempfile.TemporaryDirectory(prefix="mbert_tflite_") as tmp:
        plain = os.path.join(tmp, "model.tflite")
        tflite.export_tflite(model, plain, args.precision, args.seq_length, **export)
        tflite_metadata.write_metadata(
            plain,
            args.output,
            vocab_beside(args.checkpoint),
            labels.names,
            name=f"MobileBERT {labels.task or 'text'} classifier",
            description=f"{labels.task or 'text'} classifier fine-tuned with mbert_lib "
            f"({args.precision}, {args.seq_length} tokens)",
            python=args.metadata_python,
        )
    return os.path.getsize(args.output)


def _metadata_labels(args):
    """The labels of the classifier to export with metadata; CommandError if it cannot be."""
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.checkpoints import checkpoint_shapes, resolve_checkpoint
    from mbert_lib.convert.hf import vocab_beside
    from mbert_lib.export.classifier_labels import classifier_labels

    if args.model != "classifier":
        raise CommandError("--metadata describes a classifier's labels: add --model classifier")
    shapes = checkpoint_shapes(resolve_checkpoint(args.checkpoint))
    heads = [shape for name, shape in shapes.items() if name.endswith("head/dense/kernel")]
    if not heads:
        raise CommandError(f"{args.checkpoint} holds no classifier (no head/dense/kernel)")
    labels = classifier_labels(args.checkpoint, heads[0][1])
    check_metadata_target(labels, args.dynamic_shape)
    if vocab_beside(args.checkpoint) is None:
        raise CommandError(
            f"{args.checkpoint} has no vocab.txt beside it: the metadata packs "
            "the tokenizer's vocabulary"
        )
    support_python(args.metadata_python)  # fail before converting
    return labels
