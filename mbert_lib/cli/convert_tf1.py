"""`python -m mbert_lib convert tf1`: a released TF1 checkpoint -> an mbert_lib TF2 checkpoint."""

import os

from mbert_lib.cli import CommandError

HELP = "convert a TF1 MobileBERT checkpoint (google-research layout) to a TF2 checkpoint directory"


def add_arguments(parser) -> None:
    parser.add_argument("--bert_config_file", required=True, help="the released bert_config.json")
    parser.add_argument(
        "--tf1_checkpoint_path",
        required=True,
        help="TF1 checkpoint prefix (e.g. .../mobilebert_variables.ckpt) "
        "or a directory with a 'checkpoint' file",
    )
    parser.add_argument(
        "--tf2_checkpoint_path",
        required=True,
        help="output directory: bert_config.json + checkpoint + conversion.json",
    )
    parser.add_argument(
        "--use_model_prefix",
        action="store_true",
        help="store the Pretrainer under 'model/' (as tf.train.Checkpoint(model=...))",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def run(args) -> int:

    if os.path.exists(args.tf2_checkpoint_path) and not args.overwrite:
        raise CommandError(f"{args.tf2_checkpoint_path} already exists (use --overwrite)")
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.convert import convert_tf1_checkpoint

    report = convert_tf1_checkpoint(
        args.bert_config_file,
        args.tf1_checkpoint_path,
        args.tf2_checkpoint_path,
        args.use_model_prefix,
        args.overwrite,
    )
    print(report.summary())
    return 0
