# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 02 · The trigram embedding: worked solutions (instructor copy)
#
# Worked answers to the exercises of `notebooks/02_trigram_embedding.ipynb`. Every
# number is computed when the notebook runs; the prose reads the printed values of the
# committed full run. Run times printed by `stopwatch` are wall times of that full run
# on the CPU printed in the first cell; latencies are compared only as ratios measured
# in this run.
#
# Shapes: B batch, T tokens, V vocab, E embedding size, H = 512 hidden size.

# %%
import mbert_lib  # noqa: F401  (first: silences TensorFlow's start-up logs)
from mbert_lib import anatomy, count_params, get_preset, runtime
from mbert_lib import hardware
from mbert_lib.bench import interleaved_timings, time_callable
from mbert_lib.layers import MobileBertEmbedding, trigram_concat
from mbert_lib.quiet_start import native_stderr_silenced


import numpy as np
import pandas as pd
import tensorflow as tf
import tf_keras
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from IPython.display import display

pd.set_option("display.width", 180)
pd.set_option("display.max_columns", 20)
tf_keras.utils.set_random_seed(0)
tf.get_logger().setLevel("ERROR")  # no "Assets written to ..." lines from the TFLite converter
print(hardware.describe())
print("fast mode:", runtime.fast_mode(), "| TensorFlow", tf.__version__)
config = get_preset("mobilebert")
V, E, H = config.vocab_size, config.embedding_size, config.hidden_size


def make_embedding(cfg, cls=MobileBertEmbedding, **kwargs):
    """An embedding layer with `cfg`'s sizes (any subclass of MobileBertEmbedding)."""
    return cls(vocab_size=cfg.vocab_size, embedding_size=cfg.embedding_size,
               hidden_size=cfg.hidden_size, max_position_embeddings=cfg.max_position_embeddings,
               type_vocab_size=cfg.type_vocab_size, trigram_input=cfg.trigram_input,
               normalization_type=cfg.normalization_type, **kwargs)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1 · Conv1D inside the embedding, and which form is faster
#
# > Replace `trigram_concat` + dense by a `Conv1D` inside a copy of
# > `MobileBertEmbedding` and time both on your CPU for T = 128 and T = 512 with
# > `mbert_lib.bench.time_callable`. Which is faster, and why might a TFLite converter
# > prefer one form?
#
# *Hint: subclass `MobileBertEmbedding` and override `call`; copy the kernel as
# `W.reshape(3, E, H)[::-1]` (section 2); time the two round-robin
# (`mbert_lib.bench.interleaved_timings`) so background load hits both alike, and
# list the ops of both TFLite conversions.*
#
# The subclass keeps every table and the norm of the original and computes
# $\mathrm{Conv1D}(e)_t = e_{t-1}K_0 + e_tK_1 + e_{t+1}K_2 + b$ in place of
# $W[e_{t+1}; e_t; e_{t-1}] + b$.

# %%
class ConvTrigramEmbedding(MobileBertEmbedding):
    """MobileBertEmbedding with a width-3 Conv1D in the projection's slot (no trigram_concat)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.embedding_transformation = tf_keras.layers.Conv1D(      # replaces the Dense
            self.hidden_size, 3, padding="same", name="trigram_conv")

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = tf.shape(input_word_ids)[1]
        x = self.embedding_transformation(self.word_embeddings(input_word_ids))  # [B, T, H]
        positions = self.position_embeddings(tf.range(seq_length))               # [T, H]
        x = x + positions[tf.newaxis] + self.token_type_embeddings(input_type_ids)
        return self.dropout(self.norm(x), training=training)                     # [B, T, H]


B = 1
lengths = runtime.pick((128, 512), (16, 64))
ids = {T: tf.random.uniform([B, T], 0, V, tf.int32, seed=T) for T in lengths}
types = {T: tf.zeros([B, T], tf.int32) for T in lengths}
dense_emb = make_embedding(config, name="dense_form")
conv_emb = make_embedding(config, ConvTrigramEmbedding, name="conv_form")
dense_emb(ids[lengths[0]], types[lengths[0]])
conv_emb(ids[lengths[0]], types[lengths[0]])
rng = np.random.default_rng(0)
dense_emb.norm.gamma.assign(rng.normal(1.0, 0.2, H))              # trained-looking γ, β, b
dense_emb.norm.beta.assign(rng.normal(0.0, 0.2, H))
dense_emb.embedding_transformation.bias.assign(rng.normal(0.0, 0.1, H))
for name in ("word_embeddings", "position_embeddings", "token_type_embeddings", "norm"):
    getattr(conv_emb, name).set_weights(getattr(dense_emb, name).get_weights())
W = dense_emb.embedding_transformation.kernel.numpy()              # [3E, H]
conv_emb.embedding_transformation.set_weights([W.reshape(3, E, H)[::-1],
                                               dense_emb.embedding_transformation.bias.numpy()])
gaps = {T: np.abs(dense_emb(ids[T], types[T]) - conv_emb(ids[T], types[T])).max()
        for T in lengths}
print("max |dense form − Conv1D form| per T:", {T: f"{g:.1e}" for T, g in gaps.items()})

# %%
forwards = {}
for T in lengths:
    for name, layer in (("shift + concat + dense", dense_emb), ("Conv1D", conv_emb)):
        fn = tf.function(lambda i, s, layer=layer: layer(i, s, training=False))
        forwards[f"{name}, T = {T}"] = (lambda fn=fn, T=T: fn(ids[T], types[T]).numpy())
with runtime.stopwatch("exercise 1, Keras timing"):
    timings = interleaved_timings(forwards, repeats=runtime.pick(300, 5),
                                  warmup=runtime.pick(20, 2))
    single = time_callable(forwards[f"Conv1D, T = {lengths[0]}"], repeats=runtime.pick(100, 3))
keras_ms = pd.DataFrame([{"form": k.split(", T = ")[0], "T": int(k.split("T = ")[1]),
                          "median_ms": t.median_ms, "min_ms": t.min_ms}
                         for k, t in timings.items()])
keras_table = keras_ms.pivot(index="T", columns="form", values="median_ms")
keras_table["Conv1D / dense"] = keras_table["Conv1D"] / keras_table["shift + concat + dense"]
print(f"time_callable alone, Conv1D at T = {lengths[0]}: median {single.median_ms:.3f} ms "
      f"(interleaved: {keras_table.loc[lengths[0], 'Conv1D']:.3f} ms)")
keras_table.round(3)

# %% [markdown]
# And what a TFLite converter makes of each: both embeddings exported for a fixed
# [1, 128] input (as `mbert_lib.export` does), the ops listed without delegates (the
# graph the converter wrote), then timed through the LiteRT interpreter with its
# default XNNPACK delegate, one thread.

# %%
def to_tflite(layer, T):
    """The layer's forward for a fixed [1, T] input as a TFLite flatbuffer. As in
    `mbert_lib.export.tflite.convert`, a plain tf.Module owns the weights for the
    converter (the Keras layer itself would be re-saved layer by layer)."""
    spec = [tf.TensorSpec([1, T], tf.int32, name="input_word_ids"),
            tf.TensorSpec([1, T], tf.int32, name="input_type_ids")]
    fn = tf.function(lambda i, s: layer(i, s, training=False)).get_concrete_function(*spec)
    weights = tf.Module()
    weights.variables_list = list(layer.weights)
    return tf.lite.TFLiteConverter.from_concrete_functions([fn], weights).convert()


def tflite_runner(model, delegates=True):
    kind = (OpResolverType.AUTO if delegates
            else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter = Interpreter(model_content=model, num_threads=1,
                              experimental_op_resolver_type=kind)
    interpreter.allocate_tensors()
    return interpreter


T_lite = lengths[0]
ops, lite_fns, lite_out = {}, {}, {}
with runtime.stopwatch("exercise 1, TFLite"), native_stderr_silenced():
    for name, layer in (("shift + concat + dense", dense_emb), ("Conv1D", conv_emb)):
        model = to_tflite(layer, T_lite)
        ops[name] = [op["op_name"] for op in tflite_runner(model, False)._get_ops_details()]
        interpreter = tflite_runner(model)
        inputs = {d["name"]: d["index"] for d in interpreter.get_input_details()}
        out_index = interpreter.get_output_details()[0]["index"]

        def run(interpreter=interpreter, inputs=inputs, out_index=out_index):
            for key, value in (("input_word_ids", ids[T_lite]), ("input_type_ids",
                                                                 types[T_lite])):
                index = next(i for n, i in inputs.items() if key in n)
                interpreter.set_tensor(index, value.numpy())
            interpreter.invoke()
            return interpreter.get_tensor(out_index)
        lite_fns[name], lite_out[name] = run, run()
    lite_timings = interleaved_timings(lite_fns, repeats=runtime.pick(300, 5),
                                       warmup=runtime.pick(20, 2))
for name, o in ops.items():
    print(f"{name}: {len(o)} TFLite ops: {' → '.join(o)}")
lite = pd.DataFrame.from_dict({name: {"TFLite ops": len(o),
                                      "median_ms (XNNPACK, 1 thread)":
                                      lite_timings[name].median_ms,
                                      "min_ms": lite_timings[name].min_ms}
                               for name, o in ops.items()}, orient="index")
lite["vs dense form"] = lite["median_ms (XNNPACK, 1 thread)"] \
    / lite.loc["shift + concat + dense", "median_ms (XNNPACK, 1 thread)"]
lite.round(3)

# %%
reference = dense_emb(ids[T_lite], types[T_lite]).numpy()
scale = np.abs(reference).max()
for T, g in gaps.items():
    assert g < 1e-5 * scale, (T, g)
for name, out in lite_out.items():
    np.testing.assert_allclose(out, reference, atol=1e-4 * scale, rtol=0, err_msg=name)
assert "CONV_2D" in ops["Conv1D"] and "CONCATENATION" not in ops["Conv1D"]
assert {"CONCATENATION", "FULLY_CONNECTED"} <= set(ops["shift + concat + dense"])
assert count_params(conv_emb) == count_params(dense_emb)      # the conv holds W's numbers
print("both forms equal in Keras and in TFLite (to float round-off)")

# %% [markdown]
# **Answer.** The two forms compute the same embedding (to 1e-7) and cost about the
# same. In Keras they are within about 10% of each other (Conv1D / dense 0.91 at
# T = 128 and 1.00 at T = 512 in this run); differences of that size change sign from
# run to run on a shared machine, so neither form is reliably faster here
# (`time_callable` alone gives the same order of magnitude; interleaving keeps
# background load out of the comparison). Through TFLite with XNNPACK, one thread, the
# dense form is the faster by about 5% (table). The multiply-adds are identical,
# $3E \cdot H$ per token; the dense form adds two slices, two pads and a concatenation,
# memory copies of a [T, 3E] tensor, and TensorFlow runs the Conv1D as a 2-D
# convolution of a [B, 1, T, E] view.
#
# Why a converter might prefer one form: the graphs differ (printed op lists). The
# Conv1D becomes RESHAPE → CONV_2D → RESHAPE, one compute kernel reading the token rows
# directly, 9 ops in all; the dense form is SLICE, PAD, SLICE, PAD, CONCATENATION and
# then FULLY_CONNECTED, 12 ops with a [T, 3E] intermediate to allocate. Fewer ops and no
# concatenation are easier for a delegate to take over whole and for the memory
# planner. The dense form, on the other hand, keeps the checkpoint's [3E, H] kernel as it
# is and lands on FULLY_CONNECTED, the most tuned kernel of mobile runtimes, which is
# what the XNNPACK timing here rewards. At this size either choice is worth a few
# hundredths of a millisecond.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2 · A causal window
#
# > Make the window causal, $x_t = [e_t; e_{t-1}; e_{t-2}]$: which `Conv1D` padding and
# > tap order reproduce it? Which would a left-to-right language model need?
#
# *Hint: `padding="causal"` pads two zero vectors on the left, so tap k reads
# $e_{t+k-2}$; match the taps to W's row blocks.*
#
# With `padding="causal"`, $\mathrm{Conv1D}(e)_t = \sum_{k=0}^{2} e_{t+k-2} K_k
# = e_{t-2}K_0 + e_{t-1}K_1 + e_t K_2$, while $W x_t = e_t W_{[0:E]} + e_{t-1}W_{[E:2E]}
# + e_{t-2}W_{[2E:3E]}$. So again $K_k = W_{[(2-k)E:(3-k)E]}$, the row blocks in reverse
# order, now with causal padding. (Concatenating oldest first, $[e_{t-2}; e_{t-1};
# e_t]$, would take the row blocks in W's own order.)

# %%
def causal_trigram_concat(e):
    """[e_t; e_{t-1}; e_{t-2}] along channels (zeros before the start). [B, T, E] -> [B, T, 3E]."""
    previous = tf.pad(e[:, :-1], [[0, 0], [1, 0], [0, 0]])                 # e_{t-1}
    before = tf.pad(e[:, :-2], [[0, 0], [2, 0], [0, 0]])                   # e_{t-2}
    return tf.concat([e, previous, before], axis=-1)


e_demo = tf.constant([[[t, 10.0 * t] for t in range(1, 6)]])              # [1, T=5, E=2]
print(pd.DataFrame(causal_trigram_concat(e_demo)[0].numpy(),
                   index=[f"x_{t}" for t in range(5)],
                   columns=[f"{s}[{i}]" for s in ("e_t", "e_t-1", "e_t-2") for i in range(2)]
                   ).to_string())

# %%
T2 = runtime.pick(64, 16)
tokens = dense_emb.word_embeddings(tf.random.uniform([2, T2], 0, V, tf.int32, seed=7))  # [2, T, E]
dense = dense_emb.embedding_transformation
with runtime.stopwatch("exercise 2"):
    results = {}
    for padding in ("causal", "same", "valid"):
        for order, kernel in (("reversed", W.reshape(3, E, H)[::-1]),
                              ("W's order", W.reshape(3, E, H))):
            conv = tf_keras.layers.Conv1D(H, 3, padding=padding)
            conv.build(tokens.shape)
            conv.set_weights([kernel, dense.bias.numpy()])
            out = conv(tokens)
            target = dense(causal_trigram_concat(tokens))
            results[(padding, order)] = (np.abs(out - target).max()
                                         if out.shape == target.shape else np.nan)
match = pd.Series(results, name="max |Conv1D − dense(causal concat)|").unstack()
match

# %% [markdown]
# What the window lets a position see: perturb the embedding of one token s and record
# which output positions change, for the model's window and the causal one.

# %%
s = T2 // 2
bumped = tf.tensor_scatter_nd_add(tokens, [[0, s]], tf.ones([1, E]))
seen = {}
for name, concat in (("trigram [e_t+1; e_t; e_t-1]", trigram_concat),
                     ("causal [e_t; e_t-1; e_t-2]", causal_trigram_concat)):
    change = np.abs(dense(concat(bumped)) - dense(concat(tokens)))[0].max(-1)
    seen[name] = (np.flatnonzero(change > 1e-6) - s).tolist()
print(f"changing token s changes output positions s + {seen}")

# %%
scale2 = np.abs(dense(causal_trigram_concat(tokens))).max()
assert match.loc["causal", "reversed"] < 1e-5 * scale2
assert match.loc["causal", "W's order"] > 1e-2 * scale2
assert match.loc["same", "reversed"] > 1e-2 * scale2          # "same" is the model's window
assert np.isnan(match.loc["valid", "reversed"])              # "valid" drops 2 positions
np.testing.assert_array_equal(causal_trigram_concat(e_demo)[0, 2], [3, 30, 2, 20, 1, 10])
assert seen == {"trigram [e_t+1; e_t; e_t-1]": [-1, 0, 1], "causal [e_t; e_t-1; e_t-2]": [0, 1, 2]}

# %% [markdown]
# **Answer.** `padding="causal"` with the taps reversed, `K = W.reshape(3, E, H)[::-1]`,
# reproduces $[e_t; e_{t-1}; e_{t-2}]$ exactly (table: the only entry at float
# round-off); "same" gives the model's centred window, "valid" drops two positions
# (NaN: the shapes differ). A left-to-right
# language model needs the causal one: with MobileBERT's window, output position
# $s - 1$ already reads token $s$ (the perturbation check: a change at $s$ reaches
# $s - 1$), so a model predicting token $s$ at position $s - 1$ could copy its target
# from the input. MLM tolerates the centred window because the tokens to predict are
# replaced by `[MASK]` before they are embedded.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3 · E = 64
#
# > With $E = 64$ instead of 128, how many parameters does the encoder save, and how
# > many FLOPs per token does the projection cost? Use `param_breakdown` and
# > `mbert_lib.anatomy.flops_breakdown`.
#
# *Hint: the token table and the projection's input both scale with E; with the
# pre-training heads, remember `extra_output_weights` is $V \times (H - E)$.*
#
# $$\Delta N_\text{encoder} = V\,\Delta E + 3\,\Delta E\,H, \qquad
#   \Delta N_\text{head} = -V\,\Delta E, \qquad
#   \text{FLOPs per token of the projection} = 2 \cdot 3E \cdot H$$

# %%
with runtime.stopwatch("exercise 3"):
    params, cost = {}, {}
    for e in (128, 64):
        cfg = config.replace(embedding_size=e)
        parts = anatomy.param_breakdown(cfg, heads=True).set_index("component").total
        flops = anatomy.flops_breakdown(cfg, 128).set_index("op").flops
        params[f"E = {e}"] = {
            "token table": parts["token table"], "trigram projection": parts["trigram projection"],
            "encoder": anatomy.param_total(cfg),
            "MLM extra_output_weights": parts["extra_output_weights"],
            "pre-training model": anatomy.param_total(cfg, heads=True)}
        cost[f"E = {e}"] = {
            "projection FLOPs per token": flops["trigram projection"] / 128,
            "projection, % of the encoder's FLOPs at T = 128":
                100 * flops["trigram projection"] / anatomy.flops(cfg, 128)}
    params, cost = pd.DataFrame(params), pd.DataFrame(cost)
    params["change"] = params["E = 64"] - params["E = 128"]
display(params.style.format("{:,}"))
cost.round(2)

# %%
dE = 64
built = {}
for e in (128, 64):
    layer = make_embedding(config.replace(embedding_size=e))
    layer(tf.zeros([1, 4], tf.int32), tf.zeros([1, 4], tf.int32))
    built[e] = count_params(layer)
assert built[128] - built[64] == V * dE + 3 * dE * H == -params.loc["encoder", "change"]
assert params.loc["pre-training model", "change"] == -(3 * dE * H)  # the head gives V·ΔE back
assert cost.loc["projection FLOPs per token", "E = 64"] == 2 * 3 * 64 * H
assert cost.loc["projection FLOPs per token", "E = 128"] == 2 * 3 * 128 * H
print(f"built embeddings: {built[128]:,} (E = 128) vs {built[64]:,} (E = 64): "
      f"{built[128] - built[64]:,} fewer = V·64 + 3·64·H")

# %% [markdown]
# **Answer.** With E = 64 the encoder loses 2,051,712 parameters (8.3% of its 24.58M):
# 1.95M from the token table ($V \cdot 64$) and 98,304 from the projection
# ($3 \cdot 64 \cdot H$), checked against built layers. With the pre-training heads the
# saving nearly vanishes: `extra_output_weights` ($V \times (H - E)$) grows by exactly
# what the table loses, so the pre-training model is only 98,304 parameters smaller.
# The projection costs $2 \cdot 3E \cdot H$ = 196,608 FLOPs per token, half of
# E = 128's 393,216 and 0.47% of the encoder's FLOPs at T = 128: in compute the table's
# width is nearly free either way. What E decides is the capacity of the token
# representation (rank ≤ E before the projection), which the paper does not ablate.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4 · Replicate padding at the ends
#
# > The tf-models and Hugging Face implementations also read zeros past the ends. What
# > would change if the window instead repeated the edge token (replicate padding)?
# > Implement it with `tf.pad(..., mode="SYMMETRIC")` and rerun the padded-sentence
# > checks.
#
# *Hint: with a pad width of 1, "SYMMETRIC" repeats the edge row ("REFLECT" would skip
# it); build the embedding from the layer's own tables with your own concat and check
# it against the layer for the zero-padded window first.*
#
# $$x_0 = [e_1; e_0; e_0], \qquad x_{T-1} = [e_{T-1}; e_{T-1}; e_{T-2}]$$
#
# A third variant answers the question behind the exercise, the padded-vs-unpadded
# mismatch of section 3: zero the embeddings of `[PAD]` positions *before* the window
# (multiply by the input mask), so the last real token reads a zero whether or not the
# batch is padded.

# %%
def replicate_trigram_concat(e):
    """[e_{t+1}; e_t; e_{t-1}] with the edge tokens repeated past the ends."""
    padded = tf.pad(e, [[0, 0], [1, 1], [0, 0]], mode="SYMMETRIC")         # [B, T + 2, E]
    return tf.concat([padded[:, 2:], e, padded[:, :-2]], axis=-1)          # [B, T, 3E]


def embed_with(layer, concat, word_ids, type_ids, mask=None):
    """`layer`'s embedding with `concat` for the window (and the token rows zeroed where
    mask = 0, when a mask is given); the same steps as MobileBertEmbedding.call."""
    tokens = layer.word_embeddings(word_ids)                                # [B, T, E]
    if mask is not None:
        tokens = tokens * tf.cast(mask, tokens.dtype)[..., tf.newaxis]
    x = layer.embedding_transformation(concat(tokens))                     # [B, T, H]
    positions = layer.position_embeddings(tf.range(tf.shape(word_ids)[1]))
    return layer.norm(x + positions[tf.newaxis] + layer.token_type_embeddings(type_ids))


print(pd.DataFrame(replicate_trigram_concat(e_demo[:, :4])[0].numpy(),
                   index=[f"x_{t}" for t in range(4)],
                   columns=[f"{s}[{i}]" for s in ("e_t+1", "e_t", "e_t-1") for i in range(2)]
                   ).to_string())

# %%
n = 6
sentence = tf.random.uniform([1, n], 1, V, tf.int32, seed=4)                # no id 0


def real_positions(concat, pad_id, pad_length, masked=False):
    """Embeddings [n, H] of the real positions of `sentence` padded with `pad_id`."""
    word_ids = tf.concat([sentence, tf.fill([1, pad_length], pad_id)], axis=1)
    mask = tf.concat([tf.ones([1, n], tf.int32), tf.zeros([1, pad_length], tf.int32)], 1)
    out = embed_with(dense_emb, concat, word_ids, tf.zeros_like(word_ids),
                     mask if masked else None)
    return out[0, :n].numpy()


variants = {"zeros (the model)": (trigram_concat, False),
            "replicate (SYMMETRIC)": (replicate_trigram_concat, False),
            "zeros, [PAD] rows zeroed first": (trigram_concat, True)}
with runtime.stopwatch("exercise 4"):
    checks = {}
    for name, (concat, masked) in variants.items():
        base = real_positions(concat, 0, 2, masked)
        checks[name] = {
            what: np.flatnonzero(np.abs(base - real_positions(concat, pad_id, length, masked))
                                 .max(axis=1) > 1e-6).tolist()
            for what, (pad_id, length) in {"pad length 6 instead of 2": (0, 6),
                                           "pad id 7 instead of 0": (7, 2),
                                           "no padding": (0, 0)}.items()}
    zero_vs_replicate = {
        f"{label}": np.flatnonzero(np.abs(real_positions(trigram_concat, 0, length)
                                          - real_positions(replicate_trigram_concat, 0, length))
                                   .max(axis=1) > 1e-6).tolist()
        for label, length in (("padded (2 [PAD])", 2), ("unpadded", 0))}
checks = pd.DataFrame(checks).T
print("real positions whose embedding replicate padding changes, against zeros:",
      zero_vs_replicate)
checks

# %%
ids_check = tf.concat([sentence, tf.zeros([1, 3], tf.int32)], axis=1)
np.testing.assert_allclose(embed_with(dense_emb, trigram_concat, ids_check,
                                      tf.zeros_like(ids_check)),
                           dense_emb(ids_check, tf.zeros_like(ids_check)), atol=1e-6)
np.testing.assert_array_equal(replicate_trigram_concat(e_demo[:, :4])[0, 0],
                              [2, 20, 1, 10, 1, 10])                    # x_0 = [e_1; e_0; e_0]
np.testing.assert_array_equal(replicate_trigram_concat(e_demo[:, :4])[0, 3],
                              [4, 40, 4, 40, 3, 30])                    # x_3 = [e_3; e_3; e_2]
assert checks.loc["zeros (the model)"].tolist() == [[], [n - 1], [n - 1]]
assert checks.loc["replicate (SYMMETRIC)"].tolist() == [[], [n - 1], [n - 1]]
assert checks.loc["zeros, [PAD] rows zeroed first"].tolist() == [[], [], []]
assert zero_vs_replicate == {"padded (2 [PAD])": [0], "unpadded": [0, n - 1]}

# %% [markdown]
# **Answer.** Replicate padding changes only the two ends of the *sequence*: `[CLS]`
# at position 0 reads itself as its left neighbour instead of a zero, and the last
# position reads itself instead of a zero. In a padded batch the last position is a
# `[PAD]`, so among the real tokens only position 0 changes; unpadded, the last real
# token changes too (printed). It does **not** change the three padded-sentence
# results (table, rows 1 and 2 equal): the padding length still does not matter, and
# the padding content and padding-vs-no-padding still change the last real token,
# which reads the first `[PAD]` in one case and itself in the other. What removes the
# mismatch is zeroing the `[PAD]` rows before the window (row 3: nothing changes). A
# released checkpoint was trained with zeros past the ends, so either change would
# need fine-tuning at least; the masked variant also costs one multiply per token.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# * A `MobileBertEmbedding` subclass with a width-3 `Conv1D` in the projection's slot
#   computes the same embedding; in this run the two forms take about the same time in
#   Keras and in TFLite. The converter turns the convolution into
#   RESHAPE → CONV_2D → RESHAPE (9 ops in all, against 12 with SLICE, PAD and
#   CONCATENATION).
# * A causal window $[e_t; e_{t-1}; e_{t-2}]$ is `padding="causal"` with the taps
#   reversed; a left-to-right LM needs it, because the centred window lets position
#   $s - 1$ read token $s$.
# * E = 64 saves 2.05M encoder parameters (8.3%) and halves the projection's 393,216
#   FLOPs per token; the pre-training model is only 98,304 parameters smaller.
# * Replicate padding changes only the sequence ends and keeps the padded-vs-unpadded
#   mismatch of the last real token; zeroing the `[PAD]` rows before the window
#   removes it.
