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
# # 02 · The trigram embedding: a 128-d table widened by a width-3 convolution
#
# Paper section 3, *Embedding Factorization* (Sun et al., ACL 2020). The
# embedding table is a large share of a BERT's parameters, so MobileBERT
# shrinks the embedding dimension to 128 and then applies a 1-D convolution
# with kernel size 3 to the raw token embeddings to produce the 512-d input
# of the first block (paper Table 1: "embedding 128, 3-convolution → 512").
#
# This notebook
#
# 1. writes the trigram input and the embedding as equations and computes
#    them with `mbert_lib.layers.trigram_concat` / `MobileBertEmbedding`,
# 2. shows that "shift, concatenate, dense" *is* a width-3 `Conv1D` with
#    padding `"same"`, once the dense kernel is rearranged into 3 taps,
# 3. looks at the sequence ends: what the last real token sees, and why the
#    padding *content* matters but the padding *length* does not,
# 4. counts what the 128-d table saves, from the configs, and where the MLM
#    head takes some of it back.
#
# Shapes: B batch, T tokens, V vocab, E = 128 embedding size, H = 512
# hidden size (inter-block width).

# %%
import mbert_lib  # noqa: F401  (selects tf-keras before TensorFlow is imported)
import numpy as np
import pandas as pd
import tensorflow as tf
import tf_keras
from IPython.display import display

from mbert_lib import build_encoder, count_params, get_preset
from mbert_lib.anatomy import param_breakdown, param_total
from mbert_lib.layers import MobileBertEmbedding, trigram_concat
from mbert_lib.models import build_pretrainer
from mbert_lib.runtime import fast_mode, figure_path, pick
from mbert_lib.viz.embedding import plot_param_stacks, plot_trigram_window, trigram_sources

tf_keras.utils.set_random_seed(0)
config = get_preset("mobilebert")
V, E, H = config.vocab_size, config.embedding_size, config.hidden_size
print("fast mode" if fast_mode() else "full mode", f"| mobilebert preset: V = {V}, E = {E}, "
      f"H = {H}, trigram_input = {config.trigram_input}, norm = {config.normalization_type}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1 · The equations
#
# With $e_t = \mathrm{Table}[\mathrm{id}_t] \in \mathbb{R}^E$ the table row of
# the token at position $t$, and zero vectors past either end of the
# sequence ($e_{-1} = e_T = 0$):
#
# $$x_t = [\,e_{t+1};\; e_t;\; e_{t-1}\,] \in \mathbb{R}^{3E}$$
#
# $$\mathrm{emb}_t = \mathrm{NoNorm}\big(W x_t + b + P_t + S_{s_t}\big) \in \mathbb{R}^H,
#   \qquad W \in \mathbb{R}^{3E \times H}$$
#
# with $P$ the position table ($[512, H]$) and $S$ the token-type table
# ($[2, H]$), then dropout (0 in MobileBERT). `trigram_concat` builds $x_t$
# by shifting the sequence one step each way and concatenating along the
# channels. With a readable $E = 2$ and $e_t = (t, 10t)$:

# %%
e_demo = tf.constant([[[t, 10.0 * t] for t in range(1, 5)]])          # [B=1, T=4, E=2]
x_demo = trigram_concat(e_demo)                                        # [1, 4, 3E=6]
print(pd.DataFrame(x_demo[0].numpy(), index=[f"x_{t}" for t in range(4)],
                   columns=[f"{slot}[{i}]" for slot in ("e_t+1", "e_t", "e_t-1")
                            for i in range(2)]).to_string())

# %%
assert x_demo.shape == (1, 4, 6)
np.testing.assert_array_equal(x_demo[0, 1], [3, 30, 2, 20, 1, 10])     # x_1 = [e_2; e_1; e_0]
np.testing.assert_array_equal(x_demo[0, 0, 4:], [0, 0])                # e_{-1} = 0
np.testing.assert_array_equal(x_demo[0, 3, :2], [0, 0])                # e_T = 0

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2 · Shift-and-concatenate + dense = a width-3 convolution
#
# A `Conv1D` with kernel size 3, padding `"same"` and kernel
# $K \in \mathbb{R}^{3 \times E \times H}$ computes (Keras convolutions are
# cross-correlations; "same" pads one zero vector at each end):
#
# $$\mathrm{Conv1D}(e)_t = \sum_{k=0}^{2} e_{t+k-1}\, K_k + b
#   = e_{t-1} K_0 + e_t K_1 + e_{t+1} K_2 + b$$
#
# while $W x_t = e_{t+1} W_{[0:E]} + e_t W_{[E:2E]} + e_{t-1} W_{[2E:3E]}$.
# So the two agree when the taps are the row blocks of $W$ in **reverse**
# order: $K_k = W_{[(2-k)E\,:\,(3-k)E]}$, i.e.
# `K = W.reshape(3, E, H)[::-1]`. Below, the projection weights of a
# `MobileBertEmbedding` with the MobileBERT shape are copied into a
# `tf_keras.layers.Conv1D`.

# %%
B, T = 2, pick(64, 16)
embedding = MobileBertEmbedding(
    vocab_size=V, embedding_size=E, hidden_size=H,
    max_position_embeddings=config.max_position_embeddings,
    type_vocab_size=config.type_vocab_size, trigram_input=True,
    normalization_type=config.normalization_type, name="embeddings")
word_ids = tf.random.uniform([B, T], 0, V, tf.int32, seed=1)           # [B, T]
type_ids = tf.concat([tf.zeros([B, T // 2], tf.int32), tf.ones([B, T - T // 2], tf.int32)], 1)
emb = embedding(word_ids, type_ids)                                    # [B, T, H]
# NoNorm's γ, β start at 1 and 0; give them trained-looking values so the check means something.
embedding.norm.gamma.assign(tf.random.normal([H], 1.0, 0.2, seed=2))
embedding.norm.beta.assign(tf.random.normal([H], 0.0, 0.2, seed=3))
emb = embedding(word_ids, type_ids)                                    # [B, T, H]

W = embedding.embedding_transformation.kernel.numpy()                  # [3E, H]
bias = embedding.embedding_transformation.bias.numpy()                 # [H]
conv = tf_keras.layers.Conv1D(H, kernel_size=3, padding="same", name="trigram_conv")
tokens = embedding.word_embeddings(word_ids)                           # [B, T, E]
conv.build(tokens.shape)
conv.set_weights([W.reshape(3, E, H)[::-1], bias])                     # K_k = W[(2-k)E:(3-k)E]
dense_path = embedding.embedding_transformation(trigram_concat(tokens))  # [B, T, H]
conv_path = conv(tokens)                                                 # [B, T, H]
print(f"W: {W.shape} -> Conv1D kernel {tuple(conv.kernel.shape)}; "
      f"max |dense − conv| = {np.abs(dense_path - conv_path).max():.2e}")

# %%
wrong = tf_keras.layers.Conv1D(H, kernel_size=3, padding="same")
wrong.build(tokens.shape)
wrong.set_weights([W.reshape(3, E, H), bias])                          # taps in W's order
wrong_gap = np.abs(dense_path - wrong(tokens)).max()
print(f"taps not reversed: max |dense − conv| = {wrong_gap:.3f} "
      f"(the output scale is {np.abs(dense_path).max():.3f})")

# %% [markdown]
# The whole embedding, rebuilt from the convolution and the layer's own
# tables, matches `MobileBertEmbedding`:
#
# $$\mathrm{emb}_t = \gamma \circ \big(\mathrm{Conv1D}(e)_t + P_t + S_{s_t}\big) + \beta$$

# %%
positions = embedding.position_embeddings.embeddings[:T]               # [T, H]
types = tf.gather(embedding.token_type_embeddings.embeddings, type_ids)  # [B, T, H]
rebuilt = embedding.norm.gamma * (conv_path + positions + types) + embedding.norm.beta
print(f"max |MobileBertEmbedding − rebuilt from Conv1D| = {np.abs(emb - rebuilt).max():.2e}")

# %%
assert emb.shape == (B, T, H) and conv.kernel.shape == (3, E, H)
scale = float(np.abs(dense_path).max())
np.testing.assert_allclose(conv_path, dense_path, atol=1e-5 * scale, rtol=0)
np.testing.assert_allclose(emb, rebuilt, atol=1e-5 * float(np.abs(emb).max()), rtol=0)
assert wrong_gap > 0.1 * scale, "reversed taps must not match"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3 · The sequence ends
#
# Past either end, the window reads zero vectors. But in a padded batch the
# sequence does not end where the sentence ends: the last real token's
# $e_{t+1}$ is the embedding of the first `[PAD]` token. The map below is
# computed by pushing one-hot "embeddings" through `trigram_concat`.

# %%
labels = ["[CLS]", "the", "cat", "sat", "[SEP]", "[PAD]", "[PAD]"]
num_real = 5
sources = trigram_sources(len(labels))                                  # [T, T + 2]
fig = plot_trigram_window(labels, num_real, path=figure_path("02_trigram_window.png"))

# %%
assert (sources >= 0).sum(axis=1).tolist() == [3] * len(labels)        # 3 inputs per position
assert sources[0, 0] == 2 and sources[-1, -1] == 0                      # zeros past either end
assert sources[num_real - 1, num_real + 1] == 0                         # last real token sees [PAD]

# %% [markdown]
# Consequences, checked on the embedding layer above. Take a sentence of $n$
# real tokens and pad it with `[PAD]` (id 0) to different lengths, or with a
# different id:
#
# * **Padding length does not matter**: padded to $n+2$ or $n+6$, every real
#   position sees exactly the same window (and the same position embedding,
#   since positions count from the start).
# * **Padding content matters**: pad with another id, and position $n-1$
#   changes, and only it.
# * **Padding at all matters**: unpadded, position $n-1$ sees a zero vector;
#   padded, it sees $e_{[\mathrm{PAD}]}$. A model fine-tuned on padded
#   batches and served unpadded sees a slightly different last token.

# %%
n = 6
sentence = tf.random.uniform([1, n], 1, V, tf.int32, seed=4)            # [1, n], no id 0


def embed_padded(pad_id, pad_length):
    """Embeddings [n, H] of the real positions of `sentence` padded with `pad_id`."""
    ids = tf.concat([sentence, tf.fill([1, pad_length], pad_id)], axis=1)  # [1, n + pad]
    return embedding(ids, tf.zeros_like(ids))[0, :n].numpy()


short_pad, long_pad = embed_padded(0, 2), embed_padded(0, 6)
other_pad, unpadded = embed_padded(7, 2), embed_padded(0, 0)
changed = {name: np.flatnonzero(np.abs(short_pad - other).max(axis=1) > 1e-6).tolist()
           for name, other in {"pad length 6 instead of 2": long_pad,
                               "pad id 7 instead of 0": other_pad,
                               "no padding": unpadded}.items()}
for name, where in changed.items():
    print(f"{name:28s} changes real positions {where}")

# %%
assert changed == {"pad length 6 instead of 2": [], "pad id 7 instead of 0": [n - 1],
                   "no padding": [n - 1]}

# %% [markdown]
# Through the whole encoder (a small MobileBERT-shaped one, with the
# attention mask hiding the padding) the same holds: the padding length
# leaves every real output unchanged, because masked keys get exactly zero
# attention probability here (the original TF1 code masks with −6 instead of
# −∞, so there the length leaks in slightly). The padding *content* reaches
# the last real token through the trigram window and from there every other
# token through attention. In this freshly initialised model attention is
# nearly uniform and the value weights are small, so the spread to the other
# tokens is small (but far above float round-off); a trained model spreads
# it further.

# %%
small = get_preset("tiny_student").replace(vocab_size=512, num_hidden_layers=2)
encoder = build_encoder(small)
small_sentence = tf.random.uniform([1, n], 1, small.vocab_size, tf.int32, seed=5)


def encode_padded(pad_id, pad_length):
    """sequence_output [n, H] of the real positions, with the padding masked."""
    ids = tf.concat([small_sentence, tf.fill([1, pad_length], pad_id)], axis=1)
    mask = tf.concat([tf.ones([1, n], tf.int32), tf.zeros([1, pad_length], tf.int32)], axis=1)
    out = encoder({"input_word_ids": ids, "input_mask": mask}, training=False)
    return out["sequence_output"][0, :n].numpy()


base_out = encode_padded(0, 2)
length_gap = np.abs(base_out - encode_padded(0, 6)).max()
content_gap = np.abs(base_out - encode_padded(7, 2)).max(axis=1)       # per real position
print(f"encoder, pad length 6 vs 2: max difference {length_gap:.1e}")
print("encoder, pad id 7 vs 0: max difference per real position",
      np.array2string(content_gap, precision=4))

# %%
out_scale = np.abs(base_out).max()
round_off = 1e-7 * out_scale                     # float32 noise at this output scale
assert length_gap < 10 * round_off
assert (content_gap > 10 * round_off).all(), "the pad id must reach every real token"
assert content_gap.argmax() == n - 1

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4 · What the 128-d table saves
#
# Parameters of the embedding, from the configs (`mbert_lib.anatomy.param_breakdown`),
# against a BERT-style embedding of the same model with $E = H = 512$ and no
# trigram projection:
#
# $$\underbrace{V E}_{\text{table}} + \underbrace{3E\,H + H}_{W,\ b}
#   + \underbrace{512\,H}_{P} + \underbrace{2H}_{S} + \underbrace{2H}_{\gamma,\beta}
#   \quad\text{vs}\quad V H + 512\,H + 2H + 2H$$
#
# The MLM head ties its output layer to the token table, but its input is
# $H$ wide, so with $E < H$ it pads the table with $V \times (H - E)$ extra
# learned weights (`cls/predictions/extra_output_weights` in the released
# checkpoints). The saving is therefore real for the deployed encoder
# (classification, QA), not for the pre-training model.

# %%
bert_style = config.replace(embedding_size=H, trigram_input=False)
variants = {f"E = {E}, trigram conv → {H}": config, f"E = H = {H}, no projection": bert_style}


def embedding_parts(cfg, with_mlm_output):
    """{component: parameters} of the embedding (and of the MLM output layer)."""
    df = param_breakdown(cfg, heads=True)
    parts = dict(zip(df[df.group == "embedding"].component, df[df.group == "embedding"].total))
    if with_mlm_output:
        extra = df[df.component == "extra_output_weights"].total.sum()
        parts["MLM extra_output_weights"] = int(extra)
    return parts


stacks = {}
for name, cfg in variants.items():
    stacks[f"encoder embedding\n{name}"] = embedding_parts(cfg, False)
for name, cfg in variants.items():
    stacks[f"+ MLM output layer (pre-training)\n{name}"] = embedding_parts(cfg, True)
table = pd.DataFrame(stacks).fillna(0).astype(int)
table.loc["total"] = table.sum()
display(table.style.format("{:,}"))

# %%
# The arithmetic against built layers: the embedding layer and the pre-training model.
built_embedding = {}
for name, cfg in variants.items():
    layer = MobileBertEmbedding(
        vocab_size=cfg.vocab_size, embedding_size=cfg.embedding_size,
        hidden_size=cfg.hidden_size, max_position_embeddings=cfg.max_position_embeddings,
        type_vocab_size=cfg.type_vocab_size, trigram_input=cfg.trigram_input,
        normalization_type=cfg.normalization_type)
    layer(tf.zeros([1, 4], tf.int32), tf.zeros([1, 4], tf.int32))
    built_embedding[name] = count_params(layer)
    assert built_embedding[name] == sum(embedding_parts(cfg, False).values()), name
one_layer = {name: cfg.replace(num_hidden_layers=1) for name, cfg in variants.items()}
pretrainers = {name: build_pretrainer(cfg) for name, cfg in one_layer.items()}
for name, cfg in one_layer.items():
    mlm = pretrainers[name].masked_lm
    extra = 0 if mlm.extra_output_weights is None else int(tf.size(mlm.extra_output_weights))
    assert extra == embedding_parts(cfg, True)["MLM extra_output_weights"], name
print("parameter arithmetic matches the built layers:", built_embedding)

# %%
small_name, big_name = list(variants)
saved = built_embedding[big_name] - built_embedding[small_name]
encoder_total = param_total(config)
extra_back = embedding_parts(config, True)["MLM extra_output_weights"]
print(f"encoder embedding: {built_embedding[small_name] / 1e6:.2f}M instead of "
      f"{built_embedding[big_name] / 1e6:.2f}M, {saved / 1e6:.2f}M saved "
      f"({saved / built_embedding[big_name]:.0%} of the BERT-style embedding)")
print(f"the whole MobileBERT encoder has {encoder_total / 1e6:.2f}M parameters: "
      f"without the factorization it would have {(encoder_total + saved) / 1e6:.2f}M")
print(f"the MLM head's extra_output_weights add back {extra_back / 1e6:.2f}M during "
      f"pre-training: net change with the head {(extra_back - saved) / 1e6:+.2f}M")

# %%
assert saved == V * (H - E) - (3 * E * H + H)
fig = plot_param_stacks(
    stacks, path=figure_path("02_embedding_params.png"),
    title=f"Embedding parameters of MobileBERT (V = {V:,}), "
          f"with and without the factorized {E}-d table (paper §3.4)")

# %% [markdown]
# The trigram projection costs $3E \cdot H$ multiply-adds per token; the
# position and type tables are unchanged. A deployed MobileBERT classifier
# keeps the saving; a pre-training checkpoint does not (and is slightly
# larger, by the projection).
#
# ## Summary
#
# * The trigram input $x_t = [e_{t+1}; e_t; e_{t-1}]$ followed by the dense
#   $3E \to H$ projection is exactly a width-3 `Conv1D` (padding "same") with
#   the projection's row blocks as taps, in reverse order (asserted to float
#   precision; the unreversed taps do not match).
# * Past either end the window reads zeros; in a padded batch the last real
#   token reads the first `[PAD]` embedding instead. Padding length does not
#   change any real token's output; padding content changes the last real
#   token's embedding and, through attention, every real output
#   (`figures/02_trigram_window.png`).
# * A 128-d table with the projection saves what the printed arithmetic shows
#   in the encoder's embedding, checked against built layers; the MLM head's
#   `extra_output_weights` give it back during pre-training
#   (`figures/02_embedding_params.png`).
#
# ## Exercises
#
# Worked solutions: `solutions/02_trigram_embedding_solutions.ipynb`.
#
# 1. Replace `trigram_concat` + dense by a `Conv1D` inside a copy of
#    `MobileBertEmbedding` and time both on this CPU for T = 128 and T = 512
#    with `mbert_lib.bench.time_callable`. Which is faster, and why might a
#    TFLite converter prefer one form?
#    *Hint: subclass `MobileBertEmbedding` and override `call`; copy the kernel as
#    `W.reshape(3, E, H)[::-1]` (section 2); time the two round-robin
#    (`mbert_lib.bench.interleaved_timings`) so background load hits both alike, and
#    list the ops of both TFLite conversions.*
# 2. Make the window causal, $x_t = [e_t; e_{t-1}; e_{t-2}]$: which
#    `Conv1D` padding and tap order reproduce it? Which would a left-to-right
#    language model need?
#    *Hint: `padding="causal"` pads two zero vectors on the left, so tap k reads
#    $e_{t+k-2}$; match the taps to W's row blocks.*
# 3. With $E = 64$ instead of 128, how many parameters does the encoder save,
#    and how many FLOPs per token does the projection cost? Use
#    `param_breakdown` and `mbert_lib.anatomy.flops_breakdown`.
#    *Hint: the token table and the projection's input both scale with E; with the
#    pre-training heads, remember `extra_output_weights` is $V \times (H - E)$.*
# 4. The tf-models and Hugging Face implementations also read zeros past the
#    ends. What would change if the window instead repeated the edge token
#    (replicate padding)? Implement it with `tf.pad(..., mode="SYMMETRIC")`
#    and rerun the padded-sentence checks.
#    *Hint: with a pad width of 1, "SYMMETRIC" repeats the edge row ("REFLECT" would skip
#    it); build the embedding from the layer's own tables with your own concat and check
#    it against the layer for the zero-padded window first.*
