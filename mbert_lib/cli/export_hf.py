"""`python -m mbert_lib export hf`: an mbert_lib checkpoint -> the Hugging Face layout."""

import os

from mbert_lib.cli import CommandError
from mbert_lib.config import MobileBertConfig

HELP = (
    "write a model directory as a Hugging Face MobileBERT directory (config.json + "
    "model.safetensors + tokenizer): a pretrainer as MobileBertForPreTraining, a "
    "fine-tuned classifier as MobileBertForSequenceClassification"
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
        help="bert_config.json (default: the one in the checkpoint directory)",
    )
    parser.add_argument("--export_dir", required=True, help="output directory")
    parser.add_argument(
        "--vocab_file",
        default=None,
        help="the tokenizer's vocab.txt (default: the checkpoint directory's)",
    )
    parser.add_argument(
        "--do_lower_case",
        action="store_true",
        default=None,
        help="tokenizer_config.json: lower-case input (default: the "
        "vocabulary's own setting, else lower-case)",
    )
    parser.add_argument(
        "--no_lower_case",
        dest="do_lower_case",
        action="store_false",
        help="tokenizer_config.json: keep case",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def run(args) -> int:

    if os.path.exists(args.export_dir) and not args.overwrite:
        raise CommandError(f"{args.export_dir} already exists (use --overwrite)")
    # on use: building the parser (--help) must not load TensorFlow
    from mbert_lib.export.hf import export_hf

    config = MobileBertConfig.from_json_file(args.config) if args.config else None
    architecture = export_hf(
        args.checkpoint,
        args.export_dir,
        config,
        args.vocab_file,
        args.do_lower_case,
        args.overwrite,
    )
    print(
        f"wrote {args.export_dir} ({architecture}): "
        f"{', '.join(sorted(os.listdir(args.export_dir)))}"
    )
    return 0
