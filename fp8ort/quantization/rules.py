"""The one home of fp8ort's graph rules: BatchNorm folding and the Conv/Gemm/MatMul fusion patterns.

Each rule follows the onnxscript-rewriter shape: a *pattern* (what to match from an anchor node), a *check*
(``Verdict.fail("why")`` names the reason a node is left alone — it goes into the report) and a *rewrite*
(in ``rewrite.py``, one per output format). Matching works on an onnx-ir graph after shape inference.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import onnx_ir as ir

from .config import QuantizeConfig

FLOAT_TYPES = (ir.DataType.FLOAT,)


@dataclasses.dataclass
class Verdict:
    """Result of a check: ``ok`` or the reason the node stays in float."""

    ok: bool
    reason: str = ""

    @staticmethod
    def fail(reason: str) -> Verdict:
        return Verdict(False, reason)


OK = Verdict(True)


@dataclasses.dataclass
class Group:
    """One fused FP8 op: an anchor (Conv/Gemm/MatMul) plus the bias Add, residual Add and Relu it absorbs.

    Inputs are kept as (node, input index) so they stay valid while earlier groups are rewritten.
    """

    kind: str
    anchor: ir.Node
    nodes: list[ir.Node]
    weight: np.ndarray  # float32: Conv [M, C/g, kH, kW]; MatMul [K, N]; Gemm [K, N] or [N, K] (trans_b)
    bias: np.ndarray | None
    residual: tuple[ir.Node, int] | None
    activation: str
    conv_attrs: dict[str, list[int] | int]
    trans_b: int
    macs: int
    quantized: bool = True
    reason: str = ""
    float_bias: np.ndarray | None = None  # the bias before bias correction (``bias`` then holds the corrected one)

    @property
    def name(self) -> str:
        return self.anchor.name or self.anchor.outputs[0].name

    @property
    def output(self) -> ir.Value:
        return self.nodes[-1].outputs[0]

    @property
    def x(self) -> ir.Value:
        return self.anchor.inputs[0]

    @property
    def z(self) -> ir.Value | None:
        return None if self.residual is None else self.residual[0].inputs[self.residual[1]]

    @property
    def channel_axis(self) -> int:
        """Axis of ``weight`` that indexes output channels."""
        if self.kind == "Conv":
            return 0
        return 0 if self.trans_b else 1

    @property
    def fused(self) -> list[str]:
        return [n.op_type for n in self.nodes[1:]]


# ---------------------------------------------------------------------------------------------- helpers


def const_array(v: ir.Value | None) -> np.ndarray | None:
    """The constant behind a value (initializer or Constant node), else None."""
    if v is None:
        return None
    if v.const_value is not None:
        return v.const_value.numpy()
    p = v.producer()
    if p is not None and p.op_type == "Constant" and p.domain in ("", "ai.onnx"):
        attr = p.attributes.get("value")
        if attr is not None:
            return attr.value.numpy()
    return None


def shape_of(v: ir.Value | None) -> tuple[int | None, ...] | None:
    if v is None or v.shape is None:
        return None
    return tuple(d if isinstance(d, int) else None for d in v.shape)


def _single_consumer(v: ir.Value) -> ir.Node | None:
    if v.is_graph_output():
        return None
    users = v.uses()
    if len(users) != 1:
        return None
    return users[0].node


def _is_std(node: ir.Node, op: str) -> bool:
    return node.op_type == op and node.domain in ("", "ai.onnx")


def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d if isinstance(d, int) and d > 0 else 1
    return out


# ------------------------------------------------------------------------------------------ BatchNorm


def fold_batchnorm(graph: ir.Graph) -> dict[str, str]:
    """Fold inference-mode BatchNormalization into the Conv before it; returns {bn name: conv name}."""
    folded: dict[str, str] = {}
    for bn in list(graph):
        if not _is_std(bn, "BatchNormalization") or len(bn.outputs) != 1:
            continue
        conv = bn.inputs[0].producer() if bn.inputs[0] is not None else None
        if conv is None or not _is_std(conv, "Conv") or _single_consumer(conv.outputs[0]) is not bn:
            continue
        params = [const_array(v) for v in bn.inputs[1:5]]
        w = const_array(conv.inputs[1])
        b = const_array(conv.inputs[2]) if len(conv.inputs) > 2 else None
        if w is None or any(p is None for p in params) or w.dtype != np.float32:
            continue
        gamma, beta, mean, var = (np.asarray(p, dtype=np.float64).reshape(-1) for p in params)
        eps = bn.attributes.get_float("epsilon", 1e-5)
        k = gamma / np.sqrt(var + eps)
        w2 = (w.astype(np.float64) * k.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
        b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
        b2 = ((b0 - mean) * k + beta).astype(np.float32)
        base = conv.name or conv.outputs[0].name
        w_val = _new_initializer(graph, f"{base}.W_bnfold", w2)
        b_val = _new_initializer(graph, f"{base}.B_bnfold", b2)
        conv.replace_input_with(1, w_val)
        if len(conv.inputs) > 2:
            conv.replace_input_with(2, b_val)
        else:
            conv.resize_inputs(3)
            conv.replace_input_with(2, b_val)
        out = bn.outputs[0]
        conv_out = conv.outputs[0]
        conv_out.shape = out.shape or conv_out.shape
        conv_out.type = out.type or conv_out.type
        was_output = out.is_graph_output()
        out_name = out.name
        ir.convenience.replace_all_uses_with(out, conv_out, replace_graph_outputs=True)
        graph.remove(bn, safe=True)
        if was_output:
            conv_out.name = out_name
        folded[bn.name or out_name] = conv.name or conv_out.name
    return folded


def _new_initializer(graph: ir.Graph, name: str, array: np.ndarray) -> ir.Value:
    taken = set(graph.initializers)
    base, i = name, 0
    while name in taken:
        i += 1
        name = f"{base}.{i}"
    v = ir.Value(name=name, const_value=ir.Tensor(np.array(array, order="C", copy=True), name=name))
    v.shape = ir.Shape(array.shape)
    v.type = ir.TensorType(v.const_value.dtype)
    graph.register_initializer(v)
    return v


# ------------------------------------------------------------------------------------ anchor patterns


def _check_common(node: ir.Node, config: QuantizeConfig, patterns: list[re.Pattern]) -> Verdict:
    if node.op_type not in config.op_types or node.op_type in config.exclude_op_types:
        return Verdict.fail(f"op type {node.op_type} is not in op_types {list(config.op_types)}"
                            if node.op_type not in config.op_types else
                            f"op type {node.op_type} is excluded (exclude_op_types)")
    for p in patterns:
        if node.name and p.search(node.name):
            return Verdict.fail(f"name matches exclude_nodes pattern {p.pattern!r}")
    x = node.inputs[0]
    if x is None or x.dtype not in FLOAT_TYPES:
        dt = None if x is None else x.dtype
        return Verdict.fail(f"input is {dt}, only float32 activations are quantized")
    if const_array(x) is not None:
        return Verdict.fail("the activation input is a constant (fold constants first)")
    return OK


def _conv_pads(node: ir.Node, w_shape: tuple[int, ...]) -> tuple[list[int] | None, str]:
    auto_pad = node.attributes.get_string("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return list(node.attributes.get_ints("pads", [0, 0, 0, 0])), ""
    if auto_pad == "VALID":
        return [0, 0, 0, 0], ""
    xs = shape_of(node.inputs[0])
    if xs is None or len(xs) != 4 or None in xs[2:]:
        return None, f"auto_pad={auto_pad} needs a static spatial input shape"
    strides = list(node.attributes.get_ints("strides", [1, 1]))
    dil = list(node.attributes.get_ints("dilations", [1, 1]))
    pads_begin, pads_end = [], []
    for i in range(2):
        size, k, s, d = xs[2 + i], w_shape[2 + i], strides[i], dil[i]
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        pads_begin.append(big if auto_pad == "SAME_LOWER" else small)
        pads_end.append(small if auto_pad == "SAME_LOWER" else big)
    return pads_begin + pads_end, ""


def match_conv(node: ir.Node) -> tuple[dict | None, Verdict]:
    """Conv with a constant 4-D float32 weight (2-D convolution)."""
    w = const_array(node.inputs[1])
    if w is None:
        return None, Verdict.fail("weight is not a constant")
    if w.ndim != 4:
        return None, Verdict.fail(f"only 2-D convolutions are supported (weight rank {w.ndim})")
    if w.dtype != np.float32:
        return None, Verdict.fail(f"weight dtype {w.dtype} is not float32")
    b = const_array(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] is not None else None
    if len(node.inputs) > 2 and node.inputs[2] is not None and b is None:
        return None, Verdict.fail("bias is not a constant")
    pads, why = _conv_pads(node, w.shape)
    if pads is None:
        return None, Verdict.fail(why)
    xs = shape_of(node.inputs[0])
    if xs is not None and len(xs) != 4:
        return None, Verdict.fail(f"input rank {len(xs)} is not 4")
    attrs = {
        "strides": list(node.attributes.get_ints("strides", [1, 1])),
        "pads": pads,
        "dilations": list(node.attributes.get_ints("dilations", [1, 1])),
        "group": node.attributes.get_int("group", 1),
    }
    return {"weight": w, "bias": None if b is None else b.astype(np.float32).reshape(-1), "attrs": attrs,
            "trans_b": 0}, OK


def match_matmul(node: ir.Node) -> tuple[dict | None, Verdict]:
    """MatMul whose right side is a constant 2-D float32 matrix."""
    w = const_array(node.inputs[1])
    if w is None:
        return None, Verdict.fail("right side is not a constant (activation x activation MatMul stays float)")
    if w.ndim != 2 or w.dtype != np.float32:
        return None, Verdict.fail(f"right side must be a 2-D float32 constant, got {w.dtype} {w.shape}")
    xs = shape_of(node.inputs[0])
    if xs is not None and len(xs) < 2:
        return None, Verdict.fail("1-D left side")
    return {"weight": w, "bias": None, "attrs": {}, "trans_b": 0}, OK


def match_gemm(node: ir.Node) -> tuple[dict | None, Verdict]:
    """Gemm with transA=0 and a constant B; alpha goes into the weight, beta into the bias."""
    if node.attributes.get_int("transA", 0):
        return None, Verdict.fail("transA=1 is not supported")
    w = const_array(node.inputs[1])
    if w is None or w.ndim != 2 or w.dtype != np.float32:
        return None, Verdict.fail("B is not a 2-D float32 constant")
    trans_b = node.attributes.get_int("transB", 0)
    n = w.shape[0] if trans_b else w.shape[1]
    alpha = node.attributes.get_float("alpha", 1.0)
    beta = node.attributes.get_float("beta", 1.0)
    bias = None
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        c = const_array(node.inputs[2])
        if c is None:
            return None, Verdict.fail("C is not a constant")
        if c.size not in (1, n) or (c.ndim == 2 and c.shape[0] != 1):
            return None, Verdict.fail(f"C of shape {c.shape} is not a per-column bias")
        bias = (np.broadcast_to(c.reshape(-1), (n,)) * beta).astype(np.float32)
    return {"weight": (w * np.float32(alpha)).astype(np.float32) if alpha != 1.0 else w, "bias": bias,
            "attrs": {}, "trans_b": trans_b}, OK


ANCHORS = {"Conv": match_conv, "MatMul": match_matmul, "Gemm": match_gemm}


# ------------------------------------------------------------------------------------- epilogue fusion


def _extend(group: Group, claimed: set[int]) -> None:
    """Absorb a bias Add (MatMul), a residual Add and a Relu that follow the anchor, in that order.

    ``claimed`` holds the ids of nodes already absorbed by earlier groups (an Add of two convolutions belongs to
    the first one in graph order; the other one's output becomes its residual input).
    """
    n_out = group.weight.shape[group.channel_axis]
    tail = group.nodes[-1].outputs[0]

    def _next(v: ir.Value) -> ir.Node | None:
        node = _single_consumer(v)
        return None if node is None or id(node) in claimed else node

    nxt = _next(tail)
    if group.kind == "MatMul" and nxt is not None and _is_std(nxt, "Add") and group.bias is None:
        other_i = 1 if nxt.inputs[0] is tail else 0
        c = const_array(nxt.inputs[other_i])
        if c is not None and c.dtype == np.float32 and c.size == n_out and c.shape[-1] == n_out:
            group.bias = c.reshape(-1).astype(np.float32)
            group.nodes.append(nxt)
            tail = nxt.outputs[0]
            nxt = _next(tail)
    if nxt is not None and _is_std(nxt, "Add") and nxt.inputs[0] is not nxt.inputs[1]:
        other_i = 1 if nxt.inputs[0] is tail else 0
        z = nxt.inputs[other_i]
        ts, zs = shape_of(tail), shape_of(z)
        if (z is not None and const_array(z) is None and z.dtype in FLOAT_TYPES and ts is not None
                and ts == zs and shape_of(nxt.outputs[0]) in (None, ts)):
            group.residual = (nxt, other_i)
            group.nodes.append(nxt)
            tail = nxt.outputs[0]
            nxt = _next(tail)
    if nxt is not None and _is_std(nxt, "Relu"):
        group.activation = "Relu"
        group.nodes.append(nxt)
    claimed.update(id(n) for n in group.nodes)


def _macs(kind: str, anchor: ir.Node, weight: np.ndarray) -> int:
    out = shape_of(anchor.outputs[0]) or ()
    if kind == "Conv":
        per_out = int(np.prod(weight.shape[1:]))
        return _prod(out) * per_out
    k = weight.shape[1] if (kind == "Gemm" and anchor.attributes.get_int("transB", 0)) else weight.shape[0]
    return _prod(out) * k


def node_macs(node: ir.Node) -> int:
    """MACs of a Conv/Gemm/MatMul node (batch as in the graph, unknown dims as 1); 0 for other ops."""
    if node.op_type not in ANCHORS or node.domain not in ("", "ai.onnx"):
        return 0
    w = const_array(node.inputs[1]) if len(node.inputs) > 1 else None
    if w is not None:
        return _macs(node.op_type, node, w)
    a, b = shape_of(node.inputs[0]), shape_of(node.inputs[1])
    if node.op_type == "MatMul" and a and b:
        return _prod(shape_of(node.outputs[0]) or ()) * (a[-1] or 1)
    return 0


def match_groups(graph: ir.Graph, config: QuantizeConfig) -> tuple[list[Group], dict[ir.Node, str]]:
    """All fusion groups in graph order (some marked not quantized) and the reason for each other anchor."""
    patterns = [re.compile(p) for p in config.exclude_nodes]
    groups: list[Group] = []
    skipped: dict[ir.Node, str] = {}
    claimed: set[int] = set()
    for node in graph:
        if node.domain not in ("", "ai.onnx") or node.op_type not in ANCHORS:
            continue
        verdict = _check_common(node, config, patterns)
        info = None
        if verdict.ok:
            info, verdict = ANCHORS[node.op_type](node)
        if info is None:
            skipped[node] = verdict.reason
            continue
        g = Group(kind=node.op_type, anchor=node, nodes=[node], weight=info["weight"], bias=info["bias"],
                  residual=None, activation="", conv_attrs=info["attrs"], trans_b=info["trans_b"],
                  macs=_macs(node.op_type, node, info["weight"]))
        _extend(g, claimed)
        groups.append(g)
    if groups and config.keep_first_layer:
        groups[0].quantized, groups[0].reason = False, "kept in high precision (keep_first_layer)"
    if groups and config.keep_last_layer:
        groups[-1].quantized, groups[-1].reason = False, "kept in high precision (keep_last_layer)"
    return groups, skipped


def fp8_outputs(groups: list[Group], config: QuantizeConfig, float_z: frozenset[str] = frozenset()) -> set[str]:
    """Names of group outputs that can stay FP8: every consumer reads them as an FP8 op's X or Z (not as the Z of
    a group named in ``float_z``, whose residual input stays high precision)."""
    if not config.fp8_activations:
        return set()
    active = [g for g in groups if g.quantized]
    x_slot = {id(g.anchor) for g in active}
    z_slot = {id(g.residual[0]): g.residual[1] for g in active if g.residual is not None and g.name not in float_z}
    conv_anchor = {id(g.anchor) for g in active if g.kind == "Conv"}
    z_conv = {id(g.residual[0]) for g in active if g.residual is not None and g.kind == "Conv"}
    result = set()
    for g in active:
        out = g.output
        if out.is_graph_output() or not out.uses():
            continue
        ok = True
        for use in out.uses():
            node, idx = use.node, use.idx
            is_x = id(node) in x_slot and idx == 0
            is_z = id(node) in z_slot and z_slot[id(node)] == idx
            if not (is_x or is_z):
                ok = False
                break
            if config.layout == "NHWC" and g.kind == "Conv" and id(node) not in conv_anchor | z_conv:
                ok = False  # an NHWC conv output must not flow into a MatMul without a transpose
                break
        if ok:
            result.add(out.name)
    return result
