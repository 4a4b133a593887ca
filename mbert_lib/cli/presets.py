"""`python -m mbert_lib presets`: the named configurations and their sizes."""

import json

from mbert_lib.config import PRESETS

HELP = "list the named configurations (paper Table 1 shapes and laptop presets)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print the configs as JSON")


def run(args) -> int:

    if args.json:
        print(json.dumps({name: c.to_dict() for name, c in PRESETS.items()}, indent=2))
        return 0
    header = f"{'preset':<20}{'L':>4}{'H':>6}{'h':>6}{'E':>6}{'N':>4}{'F':>4}  norm        act"
    print(header)
    for name, c in PRESETS.items():
        print(
            f"{name:<20}{c.num_hidden_layers:>4}{c.hidden_size:>6}{c.attention_width:>6}"
            f"{c.embedding_size:>6}{c.num_attention_heads:>4}"
            f"{c.num_feedforward_networks:>4}  {c.normalization_type:<12}{c.hidden_act}"
        )
    return 0
