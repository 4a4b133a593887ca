"""One block, shape by shape: the closed-form trace and the shapes a built layer really produces.

`block_shape_trace(config)` writes down, from the config alone, every step of
a `MobileBertTransformer` block with its equation and its input -> output
shapes ("x [B,T,512] → a [B,T,128]"). `trace_sublayers(layer, ...)` runs a
built layer once with every sub-layer's `call` wrapped, recording the shapes
that went in and came out. `compare_shape_trace` lines the two up: each trace
row names the sub-layer (and whether its input or output) that realises it.

Letters: B batch, T tokens, H inter-block width, h intra-block width, w
attention width, N heads, d = w/N head size, I FFN hidden size.
"""

from __future__ import annotations

import pandas as pd
import tf_keras

from mbert_lib.anatomy.params import block_widths
from mbert_lib.config import MobileBertConfig


def _text(name: str, shape: tuple) -> str:
    return f"{name} [{','.join(str(s) for s in shape)}]"


def block_shape_trace(
    config: MobileBertConfig, batch_size: int | None = None, seq_length: int | None = None
) -> pd.DataFrame:
    """Rows: step, equation, shapes (text), layer, io, in_shape, out_shape.

    Shapes use the symbols "B" and "T" unless batch_size / seq_length are
    given, then numbers (to compare with a run). `layer` is the sub-layer
    path whose `io` ("input" or "output") carries the step's result.
    """
    c = config
    B = "B" if batch_size is None else batch_size
    T = "T" if seq_length is None else seq_length
    H, N, I = c.hidden_size, c.num_attention_heads, c.intermediate_size
    w, qk_in, v_in = block_widths(c)
    d = w // N
    rows = []

    def add(step, equation, inputs, out, layer, io="output"):
        (in_name, in_shape), (out_name, out_shape) = inputs, out
        rows.append(
            {
                "step": step,
                "equation": equation,
                "shapes": f"{_text(in_name, in_shape)} → {_text(out_name, out_shape)}",
                "layer": layer,
                "io": io,
                "in_shape": in_shape,
                "out_shape": out_shape,
            }
        )

    x, heads = (B, T, H), (B, T, N, d)
    res = "a" if c.use_bottleneck else "x"  # the attention residual
    if c.use_bottleneck:
        add(
            "input bottleneck (linear in)",
            "a = Norm(x W_in + b_in)",
            ("x", x),
            ("a", (B, T, w)),
            "bottleneck_input_norm",
        )
    if c.key_query_shared_bottleneck:
        add(
            "shared Q/K bottleneck",
            "s = Norm(x W_s + b_s)",
            ("x", x),
            ("s", (B, T, w)),
            "bottleneck_attention_norm",
        )
    qk = "s" if c.key_query_shared_bottleneck else ("a" if c.use_bottleneck_attention else "x")
    v = "a" if c.use_bottleneck_attention else "x"
    for name, src, width in (("Q", qk, qk_in), ("K", qk, qk_in), ("V", v, v_in)):
        layer = {"Q": "query", "K": "key", "V": "value"}[name]
        add(
            f"{layer} projection",
            f"{name} = {src} W^{name} + b^{name}  (N heads)",
            (src, (B, T, width)),
            (name, heads),
            f"attention/{layer}",
        )
    add(
        "attention probabilities",
        "A = softmax(Q Kᵀ / √d + M)",
        ("Q, K", heads),
        ("A", (B, N, T, T)),
        "attention/dropout",
        "input",
    )
    add(
        "context",
        "C = A V",
        ("A", (B, N, T, T)),
        ("C", heads),
        "attention/attention_output",
        "input",
    )
    add(
        "attention output",
        "O = Σₙ Cₙ W^O_n + b^O",
        ("C", heads),
        ("O", (B, T, w)),
        "attention/attention_output",
    )
    add(
        "attention add & norm",
        f"u = Norm(O + {res})",
        ("O", (B, T, w)),
        ("u", (B, T, w)),
        "attention_norm",
    )
    for k in range(c.num_feedforward_networks):
        add(
            f"FFN {k}: W1 + act",
            "z = act(u W₁ + b₁)",
            ("u", (B, T, w)),
            ("z", (B, T, I)),
            f"ffns[{k}]/intermediate",
        )
        add(
            f"FFN {k}: W2 + add & norm",
            "u = Norm(z W₂ + b₂ + u)",
            ("z", (B, T, I)),
            ("u", (B, T, w)),
            f"ffns[{k}]/norm",
        )
    if c.use_bottleneck:
        add(
            "output bottleneck (linear out) + add & norm",
            "y = Norm(u W_out + b_out + x)",
            ("u", (B, T, w)),
            ("y", x),
            "bottleneck_output_norm",
        )
    return pd.DataFrame(rows)


def _sublayer_paths(layer, prefix: str = "", seen: set | None = None) -> dict[str, object]:
    """Path -> sub-layer, paths built from attribute names ("ffns[0]/norm"), depth first.

    Attribute names, not Keras layer names: those get global suffixes
    ("dropout_7") that depend on how many layers were made before.
    """
    seen = set() if seen is None else seen
    paths = {}
    for attr, value in vars(layer).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, tf_keras.layers.Layer):
            items = [(attr, value)]
        elif isinstance(value, (list, tuple)) or type(value).__name__ == "ListWrapper":
            items = [
                (f"{attr}[{i}]", v)
                for i, v in enumerate(value)
                if isinstance(v, tf_keras.layers.Layer)
            ]
        else:
            continue
        for name, sub in items:
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            paths[prefix + name] = sub
            paths.update(_sublayer_paths(sub, f"{prefix}{name}/", seen))
    return paths


def _shape(value):
    if isinstance(value, (tuple, list)):
        return tuple(_shape(v) for v in value)
    shape = getattr(value, "shape", None)
    return tuple(int(s) for s in shape) if shape is not None else None


def trace_sublayers(layer: tf_keras.layers.Layer, *args, **kwargs):
    """Calls `layer(*args, **kwargs)` eagerly, recording every sub-layer call.

    Returns (the layer's outputs, DataFrame with columns order, layer (path
    of attribute names), in_shape (of the first positional input),
    out_shape). An unbuilt layer is called once first, untraced, to build
    it; the wrappers are removed afterwards.
    """
    if not layer.built:
        layer(*args, **kwargs)  # creates the sub-layers made in build()
    records = []
    paths = _sublayer_paths(layer)
    for path, sub in paths.items():

        def traced(*a, _call=sub.call, _path=path, **k):
            order = len(records)
            records.append(None)  # keep the order of entry, not of return
            out = _call(*a, **k)
            records[order] = {
                "order": order,
                "layer": _path,
                "in_shape": _shape(a[0]) if a else None,
                "out_shape": _shape(out),
            }
            return out

        object.__setattr__(sub, "call", traced)  # bypass Keras' attribute tracking
    try:
        outputs = layer(*args, **kwargs)
    finally:
        for sub in paths.values():
            object.__delattr__(sub, "call")
    return outputs, pd.DataFrame([r for r in records if r is not None])


def compare_shape_trace(
    config: MobileBertConfig, observed: pd.DataFrame, batch_size: int, seq_length: int
) -> pd.DataFrame:
    """The closed-form trace beside what `trace_sublayers` observed, with a `match` column.

    A step whose sub-layer was called more than once (shared layers) or never
    is reported as observed None, match False.
    """
    trace = block_shape_trace(config, batch_size, seq_length)
    text = block_shape_trace(config).shapes
    rows = []
    for r in trace.itertuples():
        seen = observed[observed.layer == r.layer]
        got = None
        if len(seen) == 1:
            got = seen.iloc[0]["out_shape" if r.io == "output" else "in_shape"]
        rows.append(
            {
                "step": r.step,
                "shapes": text[r.Index],
                "layer": f"{r.layer} ({r.io})",
                "expected": r.out_shape,
                "observed": got,
                "match": got == r.out_shape,
            }
        )
    return pd.DataFrame(rows)
