"""`python -m mbert_lib convert hf`: a Hugging Face MobileBERT directory -> a TF2 checkpoint."""

import os

from mbert_lib.cli import CommandError

HELP = (
    "convert a Hugging Face MobileBERT directory (config.json + model.safetensors) "
    "to a TF2 checkpoint directory"
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--model_dir",
        required=True,
        help="directory with config.json and model.safetensors "
        "(the google/mobilebert-uncased layout)",
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
    from mbert_lib.convert import convert_hf

    report = convert_hf(
        args.model_dir, args.tf2_checkpoint_path, args.use_model_prefix, args.overwrite
    )
    print(report.summary())
    return 0
