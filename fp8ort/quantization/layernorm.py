"""A LayerNormalization whose output FP8 ops read writes their FP8 copy itself (``com.fp8ort.FP8LayerNormalization``).

In an encoder each LayerNormalization output feeds the next projections (through the ``FP8Quantize`` that
``ShareInputQuantizePass`` put there for Q/K/V, or directly as an FP8MatMul's float input 0, quantized inside with its
a_scale) and, in float, the residual sum. ``FP8LayerNormalization`` writes both: ``Y`` for the float readers (the same
value, so names and graph outputs stay) and ``Y_fp8 = q(Y, y_scale)`` for the FP8 readers, which take it as their
already-quantized input 0 with the same scale. The numbers do not change (``q`` of the same ``Y``), so the QDQ
emulation needs nothing; the GPU saves a pass over the activation. A LayerNormalization left alone keeps its reason in
``node.meta[LAYERNORM_REASON_KEY]``.
"""

from __future__ import annotations

import dataclasses

import onnx_ir as ir

from .prepare import is_std

FP8ORT_DOMAIN = "com.fp8ort"
LAYERNORM_REASON_KEY = "fp8ort.layernorm_reason"  # node.meta key: why a LayerNormalization stays as it is (report)
LAYERNORM_INFO_KEY = "fp8ort.layernorm_info"  # FP8LayerNormalization node.meta: a short description (report)
FP8_READERS = ("FP8MatMul", "FP8Conv")
X_TYPES = (ir.DataType.FLOAT, ir.DataType.FLOAT16)


@dataclasses.dataclass
class Fp8Readers:
    """The FP8 readers of a LayerNormalization output: FP8Quantize nodes (dropped) and FP8 ops reading it as input 0,
    all with one constant scale (``scale``) and FP8 format (``fmt``)."""

    quantizers: list[ir.Node]
    ops: list[ir.Node]
    scale: ir.Value
    fmt: ir.DataType


def _constant(v: ir.Value | None) -> float | None:
    if v is None or v.const_value is None or v.const_value.size != 1:
        return None
    return float(v.const_value.numpy().reshape(()))


def find_fp8_readers(ln: ir.Node) -> Fp8Readers | str:
    """The FP8 readers of ``ln``'s output, or why the node stays a LayerNormalization."""
    if ln.attributes.get_int("stash_type", 1) != 1:
        return "stash_type is not float32 (FP8LayerNormalization computes the statistics in float32)"
    x = ln.inputs[0]
    if x is None or x.dtype not in X_TYPES:
        return f"its input is {None if x is None else x.dtype}, not float32 or float16"
    for v in ln.inputs[1:3]:
        if v is not None and v.dtype != x.dtype:
            return "Scale or B has another type than X"
    axis = ln.attributes.get_int("axis", -1)
    rank = None if x.shape is None else len(x.shape)
    norm = None if rank is None or not -rank <= axis < rank else list(x.shape)[axis:]
    for v in ln.inputs[1:3]:
        # FP8LayerNormalization takes Scale and B of exactly the normalized shape (no broadcasting)
        if v is not None and (norm is None or v.shape is None or list(v.shape) != norm):
            return "Scale or B is not of the normalized axes' known shape (FP8LayerNormalization does not broadcast)"
    if any(o.uses() or o.is_graph_output() for o in ln.outputs[1:]):
        return "its Mean or InvStdDev output is read"
    quantizers, ops, scales, formats = [], [], set(), set()
    first_scale = None
    for use in ln.outputs[0].uses():
        node = use.node
        if node.domain != FP8ORT_DOMAIN or use.idx != 0:
            continue  # a float reader: it keeps Y
        if node.op_type == "FP8Quantize":
            scale, fmt = node.inputs[1], node.outputs[0].dtype
            quantizers.append(node)
        elif node.op_type in FP8_READERS:
            scale, fmt = node.inputs[2] if len(node.inputs) > 2 else None, node.inputs[1].dtype
            ops.append(node)
        else:
            continue
        if _constant(scale) is None:
            return f"{node.op_type} {node.name} quantizes it with a scale that is not a constant"
        if first_scale is None:
            first_scale = scale
        scales.add(_constant(scale))
        formats.add(fmt)
    if not quantizers and not ops:
        return "no FP8 op reads its output"
    if len(scales) != 1 or len(formats) != 1:
        return "its FP8 readers quantize it with different scales or FP8 formats"
    return Fp8Readers(quantizers, ops, first_scale, formats.pop())


class Fp8LayerNormPass(ir.passes.InPlacePass):
    """Replace each LayerNormalization read by FP8 ops with one ``FP8LayerNormalization`` (run after
    ``ShareInputQuantizePass``, whose FP8Quantize nodes it absorbs)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for node in list(model.graph):
            if not is_std(node, "LayerNormalization"):
                continue
            found = find_fp8_readers(node)
            if isinstance(found, str):
                node.meta[LAYERNORM_REASON_KEY] = found
                continue
            self._rewrite(model.graph, node, found)
            modified = True
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _rewrite(graph: ir.Graph, ln: ir.Node, readers: Fp8Readers) -> None:
        old = ln.outputs[0]
        y = ir.Value(name=f"{old.name}.fp8ort", type=old.type, shape=old.shape)
        y_fp8 = ir.Value(name=f"{old.name}.fp8ort_fp8", type=ir.TensorType(readers.fmt), shape=old.shape)
        attrs = [
            ir.AttrInt64("axis", ln.attributes.get_int("axis", -1)),
            ir.AttrFloat32("epsilon", ln.attributes.get_float("epsilon", 1e-5)),
            ir.AttrInt64("output_dtype", int(readers.fmt)),
        ]
        inputs = [ln.inputs[0], ln.inputs[1], ln.inputs[2] if len(ln.inputs) > 2 else None, readers.scale]
        name = ln.name
        ln.name = f"{name}.replaced"
        new = ir.Node(FP8ORT_DOMAIN, "FP8LayerNormalization", inputs, attrs, outputs=[y, y_fp8], name=name)
        n_readers = len(readers.ops) + sum(len(q.outputs[0].uses()) for q in readers.quantizers)
        new.meta[LAYERNORM_INFO_KEY] = (
            f"FP8LayerNormalization: also writes its output in FP8 for {n_readers} FP8 op(s)"
            + (f", absorbing {len(readers.quantizers)} FP8Quantize" if readers.quantizers else "")
        )
        graph.insert_before(ln, new)
        for q in readers.quantizers:
            ir.convenience.replace_all_uses_with(q.outputs[0], y_fp8, replace_graph_outputs=True)
            graph.remove(q, safe=True)
        for op in readers.ops:
            op.replace_input_with(0, y_fp8)
        ir.convenience.replace_all_uses_with(old, y, replace_graph_outputs=True)
        graph.remove(ln, safe=True)
        y.name, y_fp8.name = old.name, f"{old.name}.fp8"
