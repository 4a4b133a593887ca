"""tensorflow/models' MobileBERTEncoder as a SavedModel: the anchor of
`python -m mbert_lib bench latency --anchor_python PY`.

Runs in the anchor's own venv (README.md beside this file) and never imports mbert_lib.
Builds tf-models' encoder from our bert_config.json names (random weights: latency does
not depend on their values), wraps it in the serving function our exporter uses (inputs
input_word_ids, input_mask, input_type_ids, int32 [batch, T]; outputs sequence_output
[batch, T, H] and pooled_output [batch, H]; inference mode) and saves it with that
function as its `serving_default` signature. Our bench converts it with the same
TFLiteConverter settings as our own encoder, so the two graphs meet one converter, one
interpreter and one timing loop.

    python export_encoder.py --config CONFIG.json --out DIR [--seq_length 128] [--batch_size 1]

CONFIG.json: a bert_config.json dict (our names; `trigram_input` and `use_bottleneck`
true). Writes DIR (a SavedModel) and DIR/anchor.json: {"params", "tensorflow",
"tf_models", "config"}.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf
import tf_keras

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_distill import encoder_config  # noqa: E402  (the same config mapping)

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def build(bert: dict):
    """tf-models' MobileBERTEncoder for our config, built by tf-models' own builder."""
    from official.nlp.configs import encoders

    return encoders.build_encoder(encoder_config(bert, "config"))


def serving_function(encoder, batch_size: int, seq_length: int):
    spec = {
        name: tf.TensorSpec([batch_size, seq_length], tf.int32, name=name) for name in INPUT_NAMES
    }

    def serve(inputs):
        outputs = encoder(inputs, training=False)
        return {
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }

    return tf.function(serve, input_signature=[spec])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="bert_config.json dict (our names)")
    parser.add_argument("--out", required=True, help="SavedModel directory to write")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with open(args.config, encoding="utf-8") as f:
        bert = json.load(f)
    tf_keras.utils.set_random_seed(args.seed)
    encoder = build(bert)
    serve = serving_function(encoder, args.batch_size, args.seq_length)
    concrete = serve.get_concrete_function()
    module = tf.Module()
    module.encoder = encoder
    module.serve = serve
    tf.saved_model.save(module, args.out, signatures={"serving_default": concrete})
    from importlib.metadata import version

    record = {
        "params": int(sum(w.shape.num_elements() for w in encoder.weights)),
        "tensorflow": tf.__version__,
        "tf_models": version("tf-models-official"),
        "config": bert,
    }
    with open(os.path.join(args.out, "anchor.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    print(json.dumps({k: v for k, v in record.items() if k != "config"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
