"""The matching rules of the graph pass: which Conv/Gemm/MatMul become one FP8 op, and the epilogue each absorbs.

Matching is hand-written and runs on the prepared onnx-ir graph (``prepare.py``: constants are initializers, shapes
inferred). Per anchor node:

1. an *anchor matcher* (``match_conv``, ``match_matmul``, ``match_gemm``) checks the weight and attributes and
   returns an :class:`AnchorMatch`, or a :class:`Rejected` whose reason goes into the report;
2. the *epilogue* after it is absorbed in contract order: a constant per-channel bias ``Add``, a residual ``Add`` of
   a tensor of the output's shape, and one activation (``activations.py``);
3. the *rewrite* into ``com.fp8ort`` ops or standard QDQ is ``rewrite.py``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import numpy as np
import onnx_ir as ir

from .activations import NONE, Activation, match_activation
from .config import QuantizeConfig
from .prepare import STD_DOMAINS, const_array, is_std, single_consumer

FLOAT_TYPES = (ir.DataType.FLOAT,)
ANCHOR_OPS = ("Conv", "MatMul", "Gemm")


@dataclasses.dataclass(frozen=True)
class Rejected:
    """Why an anchor stays in float (a report line)."""

    reason: str


@dataclasses.dataclass(frozen=True)
class ConvAttrs:
    """The attributes of a 2-D convolution, with explicit pads."""

    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    group: int


@dataclasses.dataclass
class AnchorMatch:
    """What an anchor matcher found: the float32 weight (and bias) in the FP8 op's layout.

    ``weight``: Conv ``[M, C/group, kH, kW]``; MatMul ``[K, N]``; Gemm ``[K, N]``, or ``[N, K]`` with ``trans_b``.
    """

    weight: np.ndarray
    bias: np.ndarray | None = None
    conv: ConvAttrs | None = None
    trans_b: bool = False


@dataclasses.dataclass
class Group:
    """One fused FP8 op: an anchor (Conv/Gemm/MatMul) plus the bias Add, residual Add and activation it absorbs.

    The residual is kept as (node, input index) so that it stays valid while earlier groups are rewritten.
    """

    kind: str
    anchor: ir.Node
    nodes: list[ir.Node]
    weight: np.ndarray
    bias: np.ndarray | None
    conv: ConvAttrs | None
    trans_b: bool
    residual: tuple[ir.Node, int] | None = None
    activation: Activation = NONE
    macs: int | None = None  # per sample, from the calibration data's shapes (None: not measured)
    quantized: bool = True
    reason: str = ""
    float_bias: np.ndarray | None = None  # the bias before bias correction (``bias`` then holds the corrected one)
    fused_bias: bool = False  # a bias Add after the anchor was absorbed
    fp8_weight: tuple[np.ndarray, np.ndarray] | None = None  # (FP8 weight, per-channel scale) once computed

    @property
    def name(self) -> str:
        return self.anchor.name or self.anchor.outputs[0].name

    @property
    def output(self) -> ir.Value:
        """The value the fused op replaces (the last absorbed node's output)."""
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
    def out_channels(self) -> int:
        return int(self.weight.shape[self.channel_axis])

    @property
    def op_type(self) -> str:
        return "FP8Conv" if self.kind == "Conv" else "FP8MatMul"

    def describe(self) -> str:
        """What the FP8 op computes, e.g. ``Conv+bias+residual+Silu``."""
        parts = [self.kind]
        if self.bias is not None:
            parts.append("bias")
        if self.residual is not None:
            parts.append("residual")
        if self.activation.name:
            parts.append(str(self.activation))
        return "+".join(parts)


@dataclasses.dataclass
class Matching:
    """All groups in graph order (some marked not quantized) and the reason for each anchor left alone."""

    groups: list[Group]
    skipped: dict[ir.Node, str]


# ---------------------------------------------------------------------------------------------- helpers


def shape_of(v: ir.Value | None) -> tuple[int | None, ...] | None:
    """Static dims of a value (None for symbolic ones), or None when its rank is unknown."""
    if v is None or v.shape is None:
        return None
    return tuple(d if isinstance(d, int) else None for d in v.shape)


def weight_array(v: ir.Value | None) -> np.ndarray | None:
    """A constant weight, also through ``Transpose`` of a 2-D constant (materialized transposed)."""
    w = const_array(v)
    if w is not None or v is None:
        return w
    p = v.producer()
    if is_std(p, "Transpose"):
        src = const_array(p.inputs[0])
        if src is not None and src.ndim == 2 and list(p.attributes.get_ints("perm", [1, 0])) == [1, 0]:
            return np.ascontiguousarray(src.T)
    return None


def is_weight_layer(node: ir.Node) -> bool:
    """A Conv/Gemm/MatMul whose second input is a constant: a layer the quantizer should make FP8."""
    return (
        node.op_type in ANCHOR_OPS
        and node.domain in STD_DOMAINS
        and len(node.inputs) > 1
        and weight_array(node.inputs[1]) is not None
    )


def _same_shape(a: ir.Value, b: ir.Value) -> bool:
    """Whether ``a`` and ``b`` have the same shape as far as the graph tells: equal ranks, equal static dims, and
    no static 1 against a symbolic dim (that one could broadcast). Two symbolic dims are taken as equal."""
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return False
    for da, db in zip(a.shape, b.shape):
        if isinstance(da, int) and isinstance(db, int):
            if da != db:
                return False
        elif 1 in (da, db):
            return False
    return True


# ------------------------------------------------------------------------------------ anchor matchers


def _check_common(node: ir.Node, config: QuantizeConfig, patterns: list[re.Pattern]) -> Rejected | None:
    if node.op_type not in config.op_types:
        return Rejected(f"op type {node.op_type} is not in op_types {list(config.op_types)}")
    if node.op_type in config.exclude_op_types:
        return Rejected(f"op type {node.op_type} is excluded (exclude_op_types)")
    for p in patterns:
        if node.name and p.search(node.name):
            return Rejected(f"name matches exclude_nodes pattern {p.pattern!r}")
    x = node.inputs[0]
    if x is None or x.dtype not in FLOAT_TYPES:
        return Rejected(f"input is {None if x is None else x.dtype}, only float32 activations are quantized")
    if const_array(x) is not None:
        return Rejected("the activation input is a constant")
    return None


def _conv_pads(node: ir.Node, w_shape: tuple[int, ...]) -> tuple[int, int, int, int] | Rejected:
    auto_pad = node.attributes.get_string("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = tuple(node.attributes.get_ints("pads", [0, 0, 0, 0]))
        return pads if len(pads) == 4 else Rejected(f"pads {list(pads)} are not 2-D")
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    xs = shape_of(node.inputs[0])
    if xs is None or len(xs) != 4 or None in xs[2:]:
        return Rejected(f"auto_pad={auto_pad} needs a static spatial input shape")
    strides = list(node.attributes.get_ints("strides", [1, 1]))
    dil = list(node.attributes.get_ints("dilations", [1, 1]))
    begin, end = [], []
    for i in range(2):
        size, k, s, d = xs[2 + i], w_shape[2 + i], strides[i], dil[i]
        total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(big if auto_pad == "SAME_LOWER" else small)
        end.append(small if auto_pad == "SAME_LOWER" else big)
    return (begin[0], begin[1], end[0], end[1])


def match_conv(node: ir.Node) -> AnchorMatch | Rejected:
    """Conv with a constant 4-D float32 weight (2-D convolution, grouped and depthwise included)."""
    w = const_array(node.inputs[1])
    if w is None:
        return Rejected("weight is not a constant")
    if w.ndim != 4:
        return Rejected(f"only 2-D convolutions are supported (weight rank {w.ndim})")
    if w.dtype != np.float32:
        return Rejected(f"weight dtype {w.dtype} is not float32")
    has_b = len(node.inputs) > 2 and node.inputs[2] is not None
    b = const_array(node.inputs[2]) if has_b else None
    if has_b and b is None:
        return Rejected("bias is not a constant")
    xs = shape_of(node.inputs[0])
    if xs is not None and len(xs) != 4:
        return Rejected(f"input rank {len(xs)} is not 4")
    pads = _conv_pads(node, w.shape)
    if isinstance(pads, Rejected):
        return pads
    conv = ConvAttrs(
        strides=tuple(node.attributes.get_ints("strides", [1, 1])),
        pads=pads,
        dilations=tuple(node.attributes.get_ints("dilations", [1, 1])),
        group=node.attributes.get_int("group", 1),
    )
    return AnchorMatch(w, None if b is None else b.astype(np.float32).reshape(-1), conv)


def match_matmul(node: ir.Node) -> AnchorMatch | Rejected:
    """MatMul whose right side is a constant 2-D float32 matrix (directly or through a Transpose)."""
    w = weight_array(node.inputs[1])
    if w is None:
        if const_array(node.inputs[0]) is not None:
            return Rejected("the constant is the left side (W @ x); only x @ W is an FP8MatMul")
        return Rejected("right side is not a constant (activation x activation MatMul stays float)")
    if w.ndim != 2 or w.dtype != np.float32:
        return Rejected(f"right side must be a 2-D float32 constant, got {w.dtype} {list(w.shape)}")
    xs = shape_of(node.inputs[0])
    if xs is not None and len(xs) < 2:
        return Rejected("1-D left side")
    return AnchorMatch(w)


def match_gemm(node: ir.Node) -> AnchorMatch | Rejected:
    """Gemm with transA=0 and a constant B; alpha goes into the weight, beta into the bias."""
    if node.attributes.get_int("transA", 0):
        return Rejected("transA=1 is not supported")
    w = const_array(node.inputs[1])
    if w is None or w.ndim != 2 or w.dtype != np.float32:
        return Rejected("B is not a 2-D float32 constant")
    trans_b = bool(node.attributes.get_int("transB", 0))
    n = w.shape[0] if trans_b else w.shape[1]
    alpha = node.attributes.get_float("alpha", 1.0)
    beta = node.attributes.get_float("beta", 1.0)
    bias = None
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        c = const_array(node.inputs[2])
        if c is None:
            return Rejected("C is not a constant")
        if c.size not in (1, n) or (c.ndim == 2 and c.shape[0] != 1):
            return Rejected(f"C of shape {list(c.shape)} is not a per-column bias")
        bias = (np.broadcast_to(c.reshape(-1), (n,)) * beta).astype(np.float32)
    weight = (w * np.float32(alpha)).astype(np.float32) if alpha != 1.0 else w
    return AnchorMatch(weight, bias, None, trans_b)


ANCHORS = {"Conv": match_conv, "MatMul": match_matmul, "Gemm": match_gemm}


# ------------------------------------------------------------------------------------- epilogue fusion


def _channel_bias(group: Group, node: ir.Node, tail: ir.Value) -> np.ndarray | None:
    """The constant of ``Add(tail, c)`` when ``c`` is a bias per output channel."""
    other = node.inputs[1] if node.inputs[0] is tail else node.inputs[0]
    c = const_array(other)
    m = group.out_channels
    if c is None or c.dtype != np.float32 or c.size != m or other is tail:
        return None
    if group.kind == "Conv":
        ok = c.ndim >= 3 and c.shape[-3:] == (m, 1, 1) and c.ndim <= 4
    else:
        ok = c.shape[-1] == m
    return c.reshape(-1).astype(np.float32) if ok else None


def _extend(group: Group, claimed: set[int]) -> None:
    """Absorb a bias Add, a residual Add and an activation that follow the anchor, in that order.

    ``claimed`` holds the ids of nodes absorbed by earlier groups (an Add of two convolutions belongs to the first
    one in graph order; the other one's output becomes its residual input).
    """
    tail = group.anchor.outputs[0]

    def _next(v: ir.Value) -> ir.Node | None:
        node = single_consumer(v)
        return None if node is None or id(node) in claimed else node

    nxt = _next(tail)
    if is_std(nxt, "Add") and (c := _channel_bias(group, nxt, tail)) is not None:
        group.bias = c if group.bias is None else (group.bias + c).astype(np.float32)
        group.fused_bias = True
        group.nodes.append(nxt)
        tail = nxt.outputs[0]
        nxt = _next(tail)
    if is_std(nxt, "Add") and nxt.inputs[0] is not nxt.inputs[1]:
        idx = 1 if nxt.inputs[0] is tail else 0
        z = nxt.inputs[idx]
        if (
            z is not None
            and const_array(z) is None
            and z.dtype in FLOAT_TYPES
            and _same_shape(tail, z)
            and (nxt.outputs[0].shape is None or _same_shape(tail, nxt.outputs[0]))
        ):
            group.residual = (nxt, idx)
            group.nodes.append(nxt)
            tail = nxt.outputs[0]
    act = match_activation(tail, claimed)
    if act is not None:
        group.activation = act.activation
        group.nodes.extend(act.nodes)
    claimed.update(id(n) for n in group.nodes)


def match_groups(graph: ir.Graph, config: QuantizeConfig) -> Matching:
    """Match every anchor of ``graph`` (in graph order) under ``config``."""
    patterns = [re.compile(p) for p in config.exclude_nodes]
    groups: list[Group] = []
    skipped: dict[ir.Node, str] = {}
    claimed: set[int] = set()
    for node in graph:
        if node.domain not in STD_DOMAINS or node.op_type not in ANCHORS or id(node) in claimed:
            continue
        found = _check_common(node, config, patterns) or ANCHORS[node.op_type](node)
        if isinstance(found, Rejected):
            skipped[node] = found.reason
            continue
        g = Group(node.op_type, node, [node], found.weight, found.bias, found.conv, found.trans_b)
        _extend(g, claimed)
        groups.append(g)
    if groups and config.keep_first_layer:
        groups[0].quantized, groups[0].reason = False, "kept in high precision (keep_first_layer)"
    if groups and config.keep_last_layer:
        groups[-1].quantized, groups[-1].reason = False, "kept in high precision (keep_last_layer)"
    return Matching(groups, skipped)


# ---------------------------------------------------------------------------------------------- MACs


def _prod(dims: tuple[int, ...]) -> int:
    out = 1
    for d in dims:
        out *= int(d)
    return out


def node_macs(node: ir.Node, shapes: Mapping[str, tuple[int, ...]]) -> int | None:
    """Multiply-accumulates of a Conv/Gemm/MatMul from concrete shapes (``shapes``: value name -> shape, e.g. as
    measured on calibration data); None when a needed shape is unknown (never counted as 1)."""
    if node.op_type not in ANCHORS or node.domain not in STD_DOMAINS:
        return 0
    out = shapes.get(node.outputs[0].name)
    if out is None:
        return None
    w = weight_array(node.inputs[1]) if len(node.inputs) > 1 else None
    if node.op_type == "Conv":
        if w is None:
            ws = shapes.get(node.inputs[1].name) if node.inputs[1] is not None else None
            if ws is None:
                return None
            return _prod(out) * _prod(ws[1:])
        return _prod(out) * _prod(w.shape[1:])
    xs = shapes.get(node.inputs[0].name) if node.inputs[0] is not None else None
    if node.op_type == "Gemm":
        trans_a = node.attributes.get_int("transA", 0)
        if xs is not None:
            return _prod(out) * int(xs[0] if trans_a else xs[-1])
        if w is not None:
            return _prod(out) * int(w.shape[1] if node.attributes.get_int("transB", 0) else w.shape[0])
        return None
    if xs is not None and len(xs) >= 1:
        return _prod(out) * int(xs[-1])
    if w is not None:
        return _prod(out) * int(w.shape[0])
    return None


# ---------------------------------------------------------------------------------------- FP8 outputs


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
            nhwc_conv = config.layout == "NHWC" and g.kind == "Conv"
            if nhwc_conv and id(node) not in conv_anchor | z_conv:
                ok = False  # an NHWC conv output must not flow into a MatMul without a transpose
                break
            if config.layout == "NHWC" and g.kind != "Conv" and id(node) in conv_anchor | z_conv:
                ok = False  # nor an NCHW MatMul output into an NHWC conv
                break
        if ok:
            result.add(out.name)
    return result


# ------------------------------------------------------------------------ FP8 outputs read by pooling


@dataclasses.dataclass
class ChannelGate:
    """A squeeze-excitation ``Mul(X, gate)``: ``gate`` is a quantized conv's float output of shape ``[N, C, 1, 1]``
    (``gate_group``), the product is read only as quantized layers' X."""

    node: ir.Node
    gate: ir.Value
    gate_group: Group


@dataclasses.dataclass
class PooledOutput:
    """A group output that goes FP8 although float ops read it: spatial means over it (the squeeze of
    squeeze-excitation, a classifier's pooling) and channel gates applied to it (the excitation).

    ``depends`` names the groups that must all be FP8 for it (the producer first): the rule is decided on the groups
    of one build, so the switch model of the accuracy search blends with the product of their switches.
    """

    group: Group
    pools: list[ir.Node]
    gates: list[ChannelGate]
    depends: list[str]


@dataclasses.dataclass
class Pooling:
    """What ``pooled_fp8_outputs`` decided: the FP8 outputs by name, and why each pooling/gate node that reads a
    quantized conv's output stays float."""

    outputs: dict[str, PooledOutput]
    float_reason: dict[ir.Node, str]


def _spatial_mean(node: ir.Node, x: ir.Value) -> bool:
    """``GlobalAveragePool(x)`` or ``ReduceMean(x)`` over axes 2 and 3 with keepdims of a 4-D ``x``."""
    if x.shape is None or len(x.shape) != 4 or node.inputs[0] is not x:
        return False
    if is_std(node, "GlobalAveragePool"):
        return True
    if not is_std(node, "ReduceMean") or node.attributes.get_int("keepdims", 1) == 0:
        return False
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        axes = const_array(node.inputs[1])
        axes = None if axes is None else axes.reshape(-1).tolist()
    else:
        axes = node.attributes.get_ints("axes", None)
    return axes is not None and sorted(int(a) % 4 for a in axes) == [2, 3]


def _gate_reason(node: ir.Node, x: ir.Value, by_output: dict[int, Group], reads_x: set[int]) -> str | ChannelGate:
    """The channel gate of ``Mul(x, gate)``, or why this Mul does not take FP8 ``x``."""
    if not is_std(node, "Mul") or len(node.inputs) != 2 or node.inputs[0] is node.inputs[1]:
        return f"{node.op_type} {node.name} reads it (neither an FP8 op, a spatial mean nor a channel gate Mul)"
    gate = node.inputs[1] if node.inputs[0] is x else node.inputs[0]
    m = node.outputs[0]
    gs, xs = shape_of(gate), shape_of(x)
    if gs is None or xs is None or len(gs) != 4 or len(xs) != 4 or gs[2:] != (1, 1) or xs[2:] == (1, 1):
        return "the Mul is not a per-channel gate [N, C, 1, 1] of a feature map"
    batch_differs = gs[0] != xs[0] and (None not in (gs[0], xs[0]) or 1 in (gs[0], xs[0]))  # 1: may broadcast
    if gs[1] != xs[1] or gs[1] is None or batch_differs:
        return "the gate's batch or channels do not match the feature map's"
    gate_group = by_output.get(id(gate))
    if gate_group is None or gate_group.kind != "Conv":
        return "the gate is not the output of a quantized convolution"
    if m.is_graph_output() or not m.uses() or not _same_shape(m, x):
        return "the Mul's output is a graph output or not of the feature map's shape"
    if any(u.idx != 0 or id(u.node) not in reads_x for u in m.uses()):
        return "the Mul's output is read by a node that is not a quantized convolution's X"
    return ChannelGate(node, gate, gate_group)


def pooled_fp8_outputs(
    groups: list[Group], config: QuantizeConfig, float_z: frozenset[str] = frozenset(), fp8_out: set[str] | None = None
) -> Pooling:
    """Conv outputs that go FP8 because every reader takes FP8 data: spatial means (``FP8GlobalAveragePool``),
    squeeze-excitation gates ``Mul(X, G)`` whose product only quantized convolutions read as X (``FP8ChannelMul``
    hands them FP8), and the X/Z inputs ``fp8_outputs`` accepts. One decision for both emitters: the fp8ort model
    quantizes X where the QDQ emulation does."""
    result = Pooling({}, {})
    if not config.fp8_activations:
        return result
    active = [g for g in groups if g.quantized]
    by_output = {id(g.output): g for g in active}
    by_anchor = {id(g.anchor): g for g in active}
    conv_x = {id(g.anchor) for g in active if g.kind == "Conv"}
    z_slot = {id(g.residual[0]): (g, g.residual[1]) for g in active if g.residual is not None}
    nhwc = config.layout == "NHWC"
    for g in active:
        out = g.output
        if g.kind != "Conv" or out.name in (fp8_out or ()) or out.is_graph_output() or not out.uses():
            continue
        pools, gates, depends, why = [], [], [g.name], ""
        pooling_readers = []
        for use in out.uses():
            node, idx = use.node, use.idx
            reader = by_anchor.get(id(node)) if idx == 0 else None
            z = z_slot.get(id(node))
            if z is not None and z[1] == idx and z[0].name not in float_z and (not nhwc or z[0].kind == "Conv"):
                reader = z[0]
            if reader is not None and (not nhwc or reader.kind == "Conv"):
                depends.append(reader.name)
                continue
            if reader is not None or z is not None:
                why = why or f"{node.op_type} {node.name} reads it in high precision"
                continue
            if _spatial_mean(node, out):
                pooling_readers.append(node)
                pools.append(node)
                continue
            if is_std(node, "Mul"):
                pooling_readers.append(node)  # a gate candidate: it gets a report line either way
            gate = _gate_reason(node, out, by_output, conv_x if nhwc else set(by_anchor))
            if isinstance(gate, str):
                why = why or gate
                continue
            gates.append(gate)
            depends.append(gate.gate_group.name)
            depends.extend(by_anchor[id(u.node)].name for u in gate.node.outputs[0].uses())
        if not pooling_readers:
            continue
        if why:
            for node in pooling_readers:
                result.float_reason[node] = f"{g.name}'s output stays high precision: {why}"
            continue
        result.outputs[out.name] = PooledOutput(g, pools, gates, list(dict.fromkeys(depends)))
    gate_values = {id(c.gate) for p in result.outputs.values() for c in p.gates}
    for name, p in list(result.outputs.items()):  # a gate is float by definition: it cannot be FP8 itself
        if id(p.group.output) in gate_values:
            del result.outputs[name]
            for node in p.pools + [c.node for c in p.gates]:
                result.float_reason[node] = f"{p.group.name}'s output is also a channel gate"
    return result
