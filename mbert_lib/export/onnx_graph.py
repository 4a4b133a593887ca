"""What tf2onnx leaves in the graph, rewritten before ONNX Runtime sees it.

- `register_erfc`: tf2onnx has no handler for TensorFlow's Erfc, which exact gelu uses.
- `fold_constant_shapes`: tf2onnx's constant folding keeps some weights (about a tenth of
  MobileBERT's bytes) only as the input of a Shape node; their shape is all the graph
  reads, so the shape is stored instead and the weights dropped.
- `gemms_as_matmuls`: ONNX Runtime's dynamic quantization quantizes MatMuls, not the Gemms
  tf2onnx makes of some 2-D products.

tf2onnx and onnx are optional: each function imports them when called.
"""

from __future__ import annotations

import numpy as np

_ERFC_REGISTERED: list[bool] = []


def register_erfc() -> None:
    """Teaches tf2onnx TensorFlow's Erfc: erfc(x) = 1 − erf(x) (TensorFlow's exact gelu is
    0.5 · x · erfc(−x / √2)). Once per process."""
    if _ERFC_REGISTERED:
        return
    # on use: onnx and tf2onnx are optional (requirements-clients.txt)
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    @tf_op("Erfc")
    class Erfc:
        @classmethod
        def version_9(cls, ctx, node, **kwargs):
            erf = ctx.make_node("Erf", [node.input[0]], op_name_scope=node.name)
            one = ctx.make_const(utils.make_name("one"), np.array(1.0, np.float32))
            shapes, dtypes, outputs = node.output_shapes, node.output_dtypes, node.output
            ctx.remove_node(node.name)
            ctx.make_node(
                "Sub",
                [one.output[0], erf.output[0]],
                outputs=outputs,
                name=node.name,
                shapes=shapes,
                dtypes=dtypes,
            )

    _ERFC_REGISTERED.append(True)


def _attributes(node) -> dict:
    # on use: onnx and tf2onnx are optional (requirements-clients.txt)
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def drop_unused_initializers(model) -> int:
    """Removes the stored tensors no node reads; returns how many."""
    used = {name for node in model.graph.node for name in node.input}
    unused = [i for i in model.graph.initializer if i.name not in used]
    for initializer in unused:
        model.graph.initializer.remove(initializer)
    return len(unused)


def fold_constant_shapes(model) -> int:
    """Rewrites in place each Shape of a stored tensor as a Constant holding that shape
    (its start/end attributes applied), then drops the tensors nothing else reads.
    Returns how many Shape nodes it folded."""
    # on use: onnx and tf2onnx are optional (requirements-clients.txt)
    import onnx
    from onnx import helper, numpy_helper

    initializers = {i.name: i for i in model.graph.initializer}
    folded = 0
    for node in model.graph.node:
        if node.op_type != "Shape" or node.input[0] not in initializers:
            continue
        attrs = _attributes(node)
        dims = list(initializers[node.input[0]].dims)[attrs.get("start", 0) : attrs.get("end")]
        value = numpy_helper.from_array(np.array(dims, np.int64))
        node.op_type = "Constant"
        del node.input[:]
        del node.attribute[:]
        node.attribute.append(helper.make_attribute("value", value))
        folded += 1
    drop_unused_initializers(model)
    onnx.checker.check_model(model)
    return folded


def gemms_as_matmuls(model) -> int:
    """Rewrites in place each Gemm A · Bᵀ of a stored B (alpha 1, no C, transA 0, transB 1)
    as MatMul(A, Bᵀ) with Bᵀ stored, so that `quantize_dynamic` quantizes every weight
    matrix, as LiteRT's dynamic range quantization does. Returns how many."""
    # on use: onnx and tf2onnx are optional (requirements-clients.txt)
    import onnx
    from onnx import numpy_helper

    initializers = {i.name: i for i in model.graph.initializer}
    rewritten = 0
    for node in model.graph.node:
        attrs = _attributes(node)
        plain = attrs.get("alpha", 1.0) == 1.0 and attrs.get("transA", 0) == 0
        no_c = len(node.input) == 2 or attrs.get("beta", 1.0) == 0.0
        if node.op_type != "Gemm" or not (plain and no_c and attrs.get("transB") == 1):
            continue
        if node.input[1] not in initializers:
            continue
        weight = numpy_helper.to_array(initializers[node.input[1]])  # [out, in]
        name = node.input[1] + "_transposed"
        if name not in initializers:
            initializers[name] = numpy_helper.from_array(np.ascontiguousarray(weight.T), name)
            model.graph.initializer.append(initializers[name])
        node.op_type = "MatMul"
        del node.input[1:]
        node.input.append(name)
        del node.attribute[:]
        rewritten += 1
    drop_unused_initializers(model)
    onnx.checker.check_model(model)
    return rewritten
