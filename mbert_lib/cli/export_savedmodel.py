"""`python -m mbert_lib export savedmodel`: a pretrainer as TF-Hub-style encoder +
preprocessing SavedModels, a fine-tuned classifier as one serving SavedModel (strings in)."""

import os

from mbert_lib.cli import CommandError
from mbert_lib.cli._args import check_seq_length
from mbert_lib.config import MobileBertConfig

HELP = (
    "export a pretrainer as a TF-Hub-style encoder SavedModel (with an `mlm` sub-object) "
    "and a matching preprocessing SavedModel, or a fine-tuned classifier as one serving "
    "SavedModel (strings or token ids -> logits, probabilities, label)"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a model directory (a pretrainer, or a `finetune` output) or a prefix inside one",
    )
    parser.add_argument(
        "--config",
        default=None,
        help="bert_config.json (default: the one in the checkpoint directory; "
        "if both exist they must agree)",
    )
    parser.add_argument(
        "--vocab_file",
        default=None,
        help="the model's vocab.txt (default: the checkpoint directory's)",
    )
    parser.add_argument(
        "--do_lower_case",
        action="store_true",
        default=None,
        help="lower-case and strip accents before WordPiece (default: the "
        "vocabulary's tokenizer_config.json, else lower-case)",
    )
    parser.add_argument(
        "--no_lower_case",
        dest="do_lower_case",
        action="store_false",
        help="keep case (cased vocabularies)",
    )
    parser.add_argument("--export_path", required=True, help="the SavedModel directory")
    parser.add_argument(
        "--preprocess_export_path",
        default=None,
        help="pretrainer only: the preprocessing SavedModel directory "
        "(default: EXPORT_PATH_preprocess)",
    )
    parser.add_argument(
        "--seq_length",
        type=int,
        default=None,
        help="the length strings are packed to (default: a classifier's "
        "fine-tuning length, else 128)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")


def run(args) -> int:

    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.checkpoints import expect_kind
    from mbert_lib.convert.hf import vocab_beside

    kind = expect_kind(args.checkpoint, ("pretrainer", "classifier"), "export savedmodel")
    vocab_file = args.vocab_file or vocab_beside(args.checkpoint)
    if vocab_file is None:
        raise CommandError(f"{args.checkpoint} has no vocab.txt: pass --vocab_file")
    if args.seq_length is not None and args.seq_length < 3:
        raise CommandError(f"--seq_length must be >= 3, got {args.seq_length}")
    outputs = [args.export_path]
    if kind == "pretrainer":
        outputs.append(args.preprocess_export_path or args.export_path.rstrip("/") + "_preprocess")
    for path in outputs:
        if os.path.exists(path) and not args.overwrite:
            raise CommandError(f"{path} already exists (use --overwrite)")
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.checkpoints import load_config, load_model
    from mbert_lib.data.tokenizer import load_tokenizer

    do_lower_case = load_tokenizer(vocab_file, args.do_lower_case).do_lower_case
    config = load_config(
        args.checkpoint, MobileBertConfig.from_json_file(args.config) if args.config else None
    )
    if args.seq_length is not None:
        check_seq_length(args.seq_length, {"the model": config})
    model = load_model(args.checkpoint, kind, config)
    if kind == "classifier":
        # on use: building the parser (--help) must not load TensorFlow
        from mbert_lib.export.classifier_labels import classifier_labels
        from mbert_lib.export.savedmodel_classifier import export_classifier_savedmodel

        labels = classifier_labels(args.checkpoint, model.num_classes)
        seq_length = args.seq_length or labels.seq_length or 128
        export_classifier_savedmodel(
            model, labels, vocab_file, args.export_path, do_lower_case, seq_length, args.overwrite
        )
        names = ", ".join(labels.names) or "a regression score"
        print(
            f"wrote classifier SavedModel {args.export_path} ({names}; strings packed to "
            f"seq_length {seq_length})"
        )
        return 0
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.export.preprocessing import export_preprocessing
    from mbert_lib.export.savedmodel import export_savedmodel

    seq_length = args.seq_length or 128
    export_savedmodel(model, vocab_file, args.export_path, do_lower_case, args.overwrite)
    export_preprocessing(vocab_file, outputs[1], do_lower_case, seq_length, args.overwrite)
    print(
        f"wrote encoder SavedModel {args.export_path}\n"
        f"wrote preprocessing SavedModel {outputs[1]} (seq_length {seq_length})"
    )
    return 0
