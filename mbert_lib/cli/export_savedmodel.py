"""`python -m mbert_lib export savedmodel`: TF-Hub-style encoder + preprocessing SavedModels."""

HELP = ("export a TF2 checkpoint as a TF-Hub-style encoder SavedModel (with an `mlm` "
        "sub-object) and a matching preprocessing SavedModel (strings in)")


def add_arguments(parser) -> None:
    parser.add_argument("--checkpoint", required=True,
                        help="mbert_lib checkpoint directory (or a prefix inside one)")
    parser.add_argument("--config", default=None,
                        help="bert_config.json (default: the one in the checkpoint directory; "
                             "if both exist they must agree)")
    parser.add_argument("--vocab_file", required=True, help="the model's vocab.txt")
    parser.add_argument("--do_lower_case", action="store_true", default=True,
                        help="lower-case and strip accents before WordPiece (default)")
    parser.add_argument("--no_lower_case", dest="do_lower_case", action="store_false",
                        help="keep case (cased vocabularies)")
    parser.add_argument("--export_path", required=True, help="encoder SavedModel directory")
    parser.add_argument("--preprocess_export_path", default=None,
                        help="preprocessing SavedModel directory (default: EXPORT_PATH_preprocess)")
    parser.add_argument("--seq_length", type=int, default=128,
                        help="sequence length the preprocessing model packs to (default 128)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")


def run(args) -> int:
    import os

    from mbert_lib.cli import CommandError

    preprocess_path = args.preprocess_export_path or args.export_path.rstrip("/") + "_preprocess"
    for path in (args.export_path, preprocess_path):
        if os.path.exists(path) and not args.overwrite:
            raise CommandError(f"{path} already exists (use --overwrite)")
    from mbert_lib.config import MobileBertConfig
    from mbert_lib.convert import export_preprocessing, export_savedmodel, load_pretrainer

    config = MobileBertConfig.from_json_file(args.config) if args.config else None
    model = load_pretrainer(args.checkpoint, config)
    export_savedmodel(model, args.vocab_file, args.export_path, args.do_lower_case, args.overwrite)
    export_preprocessing(args.vocab_file, preprocess_path, args.do_lower_case, args.seq_length,
                         args.overwrite)
    print(f"wrote encoder SavedModel {args.export_path}\n"
          f"wrote preprocessing SavedModel {preprocess_path} (seq_length {args.seq_length})")
    return 0
