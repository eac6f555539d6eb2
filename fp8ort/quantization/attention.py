"""Fuse multi-head attention blocks into one ``com.fp8ort.FP8Attention`` node (format ``fp8ort``).

Hugging Face encoder exports (BERT, DistilBERT; TorchScript and dynamo exporters) write self-attention as

* the Q, K and V projections ``[B, S, H*D]`` split into heads by chains of Reshape and Transpose: ``Qh [B, H, S, D]``,
  ``Kt [B, H, D, T]`` (the dynamo exporter transposes K through a 3-D Reshape/Transpose/Reshape detour),
  ``Vh [B, H, T, Dv]``;
* ``MatMul(Qh, Kt)``, a scale (a scalar constant Mul or Div on the scores, or on Q and/or K before the MatMul), an
  additive mask (Add), ``Softmax`` on the last axis, optionally ``Where(IsNaN(P), 0, P)`` (PyTorch's SDPA), and
  ``MatMul(P, Vh)``;
* a chain of Reshape and Transpose putting the heads side by side again, ``[B, S, H*Dv]``, for the out-projection.

The pass matches each such block from its Softmax and replaces it by one FP8Attention node reading the projections
as they are (see docs/operators.md). It does not trust the node names or a fixed chain of ops: it follows the
Reshape/Transpose chains and tracks what every axis holds (the factors ``B``, ``S``/``T``, ``H``, ``D`` in row-major
order), reading the target shapes of the Reshapes from constants and ``Shape -> Gather/Slice -> Concat`` subgraphs,
so that it proves ``Qh``, ``Kt``, ``Vh`` and the output are the head split and merge of ``[B, S, H*D]`` tensors. A
symbolic dimension in a target shape is identified through the chain's own tensors or by following it back through
ops that keep it (projections, LayerNorm, elementwise ops, embedding Gathers, Squeeze/Unsqueeze) to a dimension of Q,
K or V; a target dimension computed as a product (``Mul``) of such dimensions and constants must take the next
factors of the layout in some order of its parts (``B * 12`` takes ``B, H`` where ``H`` is 12).

PyTorch's ``nn.MultiheadAttention`` (``F.multi_head_attention_forward``; torchvision's ViT) works sequence-first:
Q, K and V are ``[S, B, H*D]`` (its ``batch_first=True`` transposes the input before the projection), split by
``view(S, B*H, D)`` (with a dynamic batch the TorchScript exporter computes ``Shape(x)[1] * H``), a transpose and
``view(B, H, S, D)``; after ``P @ V`` the heads are merged by ``permute(2, 0, 1, 3).view(S*B, H*Dv)`` for the
out-projection. The pass proves the head split under either labelling of the first two axes, batch-first tried
first; a sequence-first block's FP8Attention reads Q, K and V through Transposes to ``[B, S, .]``, and its output
goes back to the merged layout through a Transpose and, for ``[S*B, H*Dv]``, a Reshape with a static target (one
dimension at most unknown).

torchvision's Swin (``shifted_window_attention``) projects once, ``qkv [B*nW, N, 3*H*D]`` over the windows, and picks
the heads with ``reshape(B*nW, N, 3, H, D).permute(2, 0, 3, 1, 4)`` and ``qkv[0], qkv[1], qkv[2]`` (Gathers of a
constant index on the leading axis); its relative-position bias, a constant ``[1, H, N, N]`` once folded, is the mask.
The layout of such a projection holds a factor ``P`` (3) before the heads, which the Gather must take away: Q, K and
V picked as the thirds 0, 1 and 2 of one tensor are FP8Attention's packed form, which reads that tensor. The shifted
windows add a second, per-window mask to the scores reshaped to ``[B, nW, H, N, N]`` (a split of the batch axis);
FP8Attention's one ``attn_bias`` broadcast to ``[B*nW, H, N, N]`` would have to be built per batch, tiled from the
mask, which the pass does not do: those blocks stay float, with that reason.

A block is left float, its reason in the Softmax's ``node.meta[ATTENTION_REASON_KEY]`` (the report shows it), when
something in it does not fit: an intermediate tensor read elsewhere (``Shape`` readers whose results only feed the
block's own Reshapes are fine) or a graph output, a non-constant or non-scalar scale, a scale applied after the mask,
head sizes of Q/K and V that differ or exceed ``MAX_HEAD_SIZE`` (the GPU kernels' limit), a mask that is not float32
of rank 1 to 4, or chains whose layout cannot be proven. A mask whose dimensions are not all known statically is
used as it is: the kernel checks at run time that it broadcasts to the scores ``[B, H, S, T]``.

With ``fp8_output`` (``QuantizeConfig.fp8_activations``), the FP8Attention writes FP8 when every reader of its output
is an FP8MatMul reading it as A with the same constant a_scale and the same FP8 weight format: the same numbers, since
FP8MatMul quantizes a float A with a_scale anyway. A sequence-first block's output is float (a Transpose reads it).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import NamedTuple

import numpy as np
import onnx_ir as ir

from .. import numerics as nx
from .prepare import STD_DOMAINS, attr_value, const_array, is_std, new_initializer

FP8ORT_DOMAIN = "com.fp8ort"
MAX_HEAD_SIZE = 128  # the GPU kernels' largest head size D = Dv
ATTENTION_REASON_KEY = "fp8ort.attention_reason"  # Softmax node.meta: why its attention block stays unfused
ATTENTION_NODES_KEY = "fp8ort.attention_nodes"  # FP8Attention node.meta: names of the nodes it replaced
ATTENTION_INFO_KEY = "fp8ort.attention_info"  # FP8Attention node.meta: a short description for the report
_DIM_WALK_LIMIT = 4096  # (value, axis) pairs one dimension-equality search visits at most
_MAX_PRODUCT_PARTS = 4  # parts of a computed target dimension (each order of them is tried against the layout)

Layout = tuple[tuple[str, ...], ...]  # per axis, the factors it holds in row-major order
_BHSD: Layout = (("B",), ("H",), ("S",), ("D",))

# ops whose output has the shape of their first input
_SAME_SHAPE = frozenset(
    "Abs Cast CastLike Ceil Clip Cos Dropout Elu Erf Exp Floor Gelu HardSigmoid HardSwish Identity IsInf IsNaN "
    "LayerNormalization LeakyRelu Log LogSoftmax Mish Neg Not Reciprocal Relu Round Sigmoid Sign Sin Softmax Softplus "
    "Sqrt Tanh".split()
)
# elementwise ops with NumPy broadcasting
_BROADCAST = frozenset(
    "Add And BitwiseAnd BitwiseOr Div Equal Greater GreaterOrEqual Less LessOrEqual Max Min Mod Mul Or Pow Sub Where "
    "Xor".split()
)


class _Reject(Exception):
    """A Softmax-centred candidate that does not fit; the message is the report's reason."""


class _Dim(NamedTuple):
    """Dimension ``axis`` of ``value`` (an element of a shape tensor that is not a constant)."""

    value: ir.Value
    axis: int


class _Prod(NamedTuple):
    """A shape element computed as a product (``Mul``) of ``_Dim`` and int parts, none of them 0 or negative."""

    parts: tuple


def _product(a, b) -> int | _Prod | None:
    """The product of two shape elements: an int when both are, else a ``_Prod`` of their parts (None for too many
    parts, or an int part that is not positive: no dimension of the layout is that)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    parts = tuple(p for x in (a, b) for p in (x.parts if isinstance(x, _Prod) else (x,)))
    if len(parts) > _MAX_PRODUCT_PARTS or any(isinstance(p, int) and p < 1 for p in parts):
        return None
    return _Prod(parts)


def _rank(v: ir.Value | None) -> int | None:
    return None if v is None or v.shape is None else len(v.shape)


def _dim(v: ir.Value, axis: int) -> int | ir.SymbolicDim | None:
    r = _rank(v)
    return None if r is None or not 0 <= axis < r else v.shape[axis]


def _scalar_const(v: ir.Value | None) -> float | None:
    """The value of a one-element float constant, else None."""
    a = const_array(v)
    if a is None or a.size != 1 or a.dtype.kind != "f":
        return None
    return float(a.reshape(()))


def _perm(node: ir.Node, rank: int | None) -> list[int] | None:
    perm = attr_value(node, "perm", None)
    if perm is None:
        return None if rank is None else list(range(rank))[::-1]
    return [int(p) for p in perm]


class _Shapes:
    """What shape tensors hold (``shape_elements``) and which dimensions are provably equal (``equal``)."""

    def __init__(self) -> None:
        self._elements: dict[int, tuple[ir.Value, list | None]] = {}
        self._keys: dict[tuple[int, int], tuple[frozenset, frozenset]] = {}
        self._alive: list[dict] = []

    # ------------------------------------------------------------------------------- shape tensors
    def shape_elements(self, v: ir.Value | None, depth: int = 0) -> list | None:
        """The elements of a 0-D/1-D int64 tensor: ints, ``_Dim`` for ``Shape(x)[i]`` or ``_Prod`` for products of
        those (``nn.MultiheadAttention`` computes ``batch * heads``); None if unknown."""
        if v is None or depth > 32:
            return None
        hit = self._elements.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        out = self._compute_elements(v, depth)
        self._elements[id(v)] = (v, out)
        return out

    def _compute_elements(self, v: ir.Value, depth: int) -> list | None:
        a = const_array(v)
        if a is not None:
            return [int(x) for x in a.reshape(-1)] if a.dtype.kind in "iu" and a.ndim <= 1 else None
        node = v.producer()
        if node is None or node.domain not in STD_DOMAINS:
            return None
        op, ins = node.op_type, node.inputs

        def elems(i: int) -> list | None:
            return self.shape_elements(ins[i], depth + 1) if len(ins) > i else None

        if op == "Shape":
            r = _rank(ins[0])
            if r is None:
                return None
            start, end = int(attr_value(node, "start", 0)), attr_value(node, "end", None)
            axes = range(r)[slice(start, None if end is None else int(end))]
            return [d if isinstance(d := ins[0].shape[i], int) else _Dim(ins[0], i) for i in axes]
        if op in ("Identity", "Unsqueeze", "Squeeze"):
            e = elems(0)
            return e if e is not None and (op == "Identity" or len(e) == 1) else None
        if op == "Cast":
            return elems(0) if attr_value(node, "to", 0) in (int(ir.DataType.INT64), int(ir.DataType.INT32)) else None
        if op == "Concat":
            parts = [self.shape_elements(x, depth + 1) for x in ins]
            return None if any(p is None for p in parts) else [e for p in parts for e in p]
        if op == "Gather":
            data, idx = elems(0), const_array(ins[1]) if len(ins) > 1 else None
            if data is None or idx is None or int(attr_value(node, "axis", 0)) != 0 or idx.ndim > 1:
                return None
            n = len(data)
            picked = [int(i) for i in idx.reshape(-1)]
            return [data[i] for i in picked] if all(-n <= i < n for i in picked) else None
        if op == "Slice":
            data = elems(0)
            consts = [const_array(x) if x is not None else None for x in ins[1:5]]
            starts, ends = consts[0] if consts else None, consts[1] if len(consts) > 1 else None
            if data is None or starts is None or ends is None or starts.size != 1 or ends.size != 1:
                return None
            axes = consts[2] if len(consts) > 2 else None
            steps = consts[3] if len(consts) > 3 else None
            if (axes is not None and int(axes.reshape(-1)[0]) not in (0, -1)) or (
                steps is not None and int(steps.reshape(-1)[0]) != 1
            ):
                return None
            return data[int(starts.reshape(-1)[0]) : int(ends.reshape(-1)[0])]
        if op == "Mul":
            a, b = elems(0), elems(1)
            if a is None or b is None or (len(a) != len(b) and 1 not in (len(a), len(b))):
                return None
            n = max(len(a), len(b))
            out = [_product(a[i % len(a)], b[i % len(b)]) for i in range(n)]
            return None if any(e is None for e in out) else out
        return None

    # ---------------------------------------------------------------------------- dimension equality
    def equal(self, a: ir.Value, i: int, b: ir.Value, j: int) -> bool:
        """Whether dimension i of a and dimension j of b are provably the same number."""
        da, db = _dim(a, i), _dim(b, j)
        if isinstance(da, int) and isinstance(db, int):
            return da == db
        va, na = self._aliases(a, i)
        vb, nb = self._aliases(b, j)
        return bool(va & vb) or bool(na & nb)

    def _aliases(self, v: ir.Value, axis: int) -> tuple[frozenset, frozenset]:
        """(value, axis) pairs and exporter-given dimension names equal to ``v[axis]``, found by following the
        dimension back through the ops that keep it."""
        key = (id(v), axis)
        hit = self._keys.get(key)
        if hit is not None:
            return hit
        seen: dict[tuple[int, int], ir.Value] = {key: v}
        names: set[str] = set()
        todo = [(v, axis)]
        while todo and len(seen) < _DIM_WALK_LIMIT:
            u, j = todo.pop()
            d = _dim(u, j)
            # onnx's shape inference names unknown dimensions unk__N; only names from the model are taken as facts
            if isinstance(d, ir.SymbolicDim) and d.value and not d.value.startswith("unk__"):
                names.add(d.value)
            for w, k in self._back_edges(u, j):
                if w is not None and (id(w), k) not in seen:
                    seen[(id(w), k)] = w
                    todo.append((w, k))
        result = (frozenset(seen), frozenset(names))
        self._keys[key] = result
        self._alive.append(seen)  # the values stay referenced while their ids are cache keys
        return result

    def _back_edges(self, v: ir.Value, j: int) -> list[tuple[ir.Value, int]]:
        """Inputs of v's producer whose dimension is v[j] by the op's definition."""
        node, r = v.producer(), _rank(v)
        if node is None or r is None or v is not node.outputs[0]:
            return []
        ins, op = node.inputs, node.op_type
        if node.domain == FP8ORT_DOMAIN:
            if op == "FP8MatMul" and j < r - 1 and _rank(ins[0]) == r:
                return [(ins[0], j)]
            if op in ("FP8Quantize", "FP8Dequantize") and _rank(ins[0]) == r:
                return [(ins[0], j)]
            if op == "FP8Attention" and j < 2:
                return [(ins[0], j)]
            return []
        if node.domain not in STD_DOMAINS or not ins:
            return []
        if op in _SAME_SHAPE:
            return [(ins[0], j)] if _rank(ins[0]) == r else []
        if op in _BROADCAST:
            return _broadcast_edges([x for x in ins if x is not None], r, j)
        if op == "MatMul" and len(ins) == 2:
            ra, rb = _rank(ins[0]), _rank(ins[1])
            if ra is None or rb is None or ra < 2 or rb < 2:
                return []
            if j == r - 2:
                return [(ins[0], ra - 2)]
            if j == r - 1:
                return [(ins[1], rb - 1)]
            batch = [_Batch(ins[0], ra - 2), _Batch(ins[1], rb - 2)]
            return _broadcast_edges(batch, r - 2, j)
        if op == "Transpose":
            perm = _perm(node, r)
            return [(ins[0], perm[j])] if perm is not None and len(perm) == r else []
        if op == "Reshape" and len(ins) == 2:
            e = self.shape_elements(ins[1])
            if e is None or len(e) != r:
                return []
            if isinstance(e[j], _Dim):
                return [(e[j].value, e[j].axis)]
            if e[j] == 0 and not attr_value(node, "allowzero", 0):
                return [(ins[0], j)]
            return []
        if op == "Gather" and len(ins) == 2:
            rd, ri = _rank(ins[0]), _rank(ins[1])
            if rd is None or ri is None:
                return []
            axis = int(attr_value(node, "axis", 0)) % rd
            if j < axis:
                return [(ins[0], j)]
            if j < axis + ri:
                return [(ins[1], j - axis)]
            return [(ins[0], j - ri + 1)]
        if op == "Concat":
            axis = int(attr_value(node, "axis", 0)) % r
            return [(ins[0], j)] if j != axis and _rank(ins[0]) == r else []
        if op in ("Squeeze", "Unsqueeze"):  # the axes it keeps
            axes = const_array(ins[1]) if len(ins) > 1 and ins[1] is not None else None
            axes = attr_value(node, "axes", None) if axes is None else axes.reshape(-1).tolist()
            ri = _rank(ins[0])
            if axes is None or ri is None:
                return []
            rank = ri if op == "Squeeze" else r  # the rank its axes count in
            gone = {int(a) % rank for a in axes}
            if op == "Unsqueeze":
                return [] if j in gone or ri + len(gone) != r else [(ins[0], j - sum(a < j for a in gone))]
            kept = [i for i in range(ri) if i not in gone]
            return [(ins[0], kept[j])] if len(kept) == r else []
        if op == "Slice" and len(ins) >= 4 and _rank(ins[0]) == r:  # the axes it does not slice
            axes = const_array(ins[3])
            if axes is None or axes.dtype.kind not in "iu":
                return []
            return [] if j in {int(a) % r for a in axes.reshape(-1)} else [(ins[0], j)]
        return []


@dataclasses.dataclass
class _Batch:
    """The batch dimensions of a MatMul operand, seen as a tensor of rank ``rank`` for broadcasting."""

    value: ir.Value
    rank: int


def _broadcast_edges(inputs: list, r: int, j: int) -> list[tuple[ir.Value, int]]:
    """The inputs whose aligned dimension is out[j] for sure: every other input lacks it or has a static 1 there."""
    dims = []  # (value, aligned axis or -1 where the input lacks it, or None for an unknown rank, its size)
    for x in inputs:
        v, rank = (x.value, x.rank) if isinstance(x, _Batch) else (x, _rank(x))
        if rank is None:
            dims.append((v, None, None))
            continue
        k = j - (r - rank)
        dims.append((v, k, v.shape[k]) if k >= 0 else (v, -1, 1))
    out = []
    for i, (v, k, d) in enumerate(dims):
        if k is None or k < 0 or d == 1:
            continue
        if all(o[1] is not None and o[2] == 1 for m, o in enumerate(dims) if m != i):
            out.append((v, k))
    return out


@dataclasses.dataclass
class _Chain:
    """A Reshape/Transpose (and scalar Mul/Div) chain: ``start`` then ``nodes`` in graph order, ``values`` the
    outputs of the nodes (the last one is the chain's end)."""

    start: ir.Value
    nodes: list[ir.Node]
    values: list[ir.Value]
    scale: float = 1.0
    part: int | None = None  # the third of a packed projection a Gather picks (0 Q, 1 K, 2 V), None: not packed


@dataclasses.dataclass
class _Block:
    softmax: ir.Node
    q: ir.Value
    k: ir.Value
    v: ir.Value
    bias: ir.Value | None
    out: ir.Value  # [B, S, H*Dv]: the tensor the FP8Attention output replaces
    num_heads: int
    head_size: int
    scale: float
    nan_to_zero: int
    nodes: list[ir.Node]  # every node removed with the block
    sequence_first: bool  # q, k, v are [S, B, H*D]: FP8Attention reads them transposed, its output is transposed back
    out_shape: list[int] | None  # sequence-first: the target of a Reshape from [S, B, H*Dv] to ``out``, if needed
    packed: bool  # q is k is v, [B, S, 3*H*D]: FP8Attention reads it in its packed form


class _Matcher:
    """Match the attention block around one Softmax (``match`` returns it or raises ``_Reject``)."""

    def __init__(self, softmax: ir.Node, shapes: _Shapes, opset: int) -> None:
        self.softmax, self.shapes, self.opset = softmax, shapes, opset
        self.layouts: dict[int, tuple[ir.Value, Layout]] = {}  # id(value) -> (value, its layout)
        self.sizes: dict[str, int | None] = {}
        self.anchors: list[tuple[ir.Value, int, tuple[str, ...]]] = []
        self.inner: list[ir.Value] = []  # values that must die with the block
        self.nodes: list[ir.Node] = []
        self.sequence_first = False  # Q, K, V and the output are [S, B, ...] rather than [B, S, ...]

    # ------------------------------------------------------------------------------------- the block
    def match(self) -> _Block:
        sm = self.softmax
        r = _rank(sm.inputs[0])
        if r != 4:
            raise _Reject(f"Softmax on a tensor of rank {r if r is not None else 'unknown'}, not [B, H, S, T] scores")
        axis = int(attr_value(sm, "axis", -1 if self.opset >= 13 else 1))
        if axis not in (-1, 3):
            raise _Reject(f"Softmax over axis {axis}, not the last axis of the scores")
        qk, bias, score_scale, score_nodes = self._scores(sm.inputs[0])
        probs, nan_to_zero, pv = self._probabilities(sm)
        qh, kt, vh = qk.inputs[0], qk.inputs[1], pv.inputs[1]
        if any(const_array(x) is not None for x in (qh, kt, vh)):
            raise _Reject("a MatMul of the block has a constant operand (not attention)")
        qc = self._chain_back(qh, "query", scaled=True)
        kc = self._chain_back(kt, "key", scaled=True)
        vc = self._chain_back(vh, "value", scaled=False)
        for name, c in (("Q", qc), ("K", kc), ("V", vc)):
            if c.start.dtype != ir.DataType.FLOAT:
                raise _Reject(f"{name} is {c.start.dtype}, FP8Attention takes float32")
        d = self._int_dim(qh, -1) or self._int_dim(kt, -2)
        dv = self._int_dim(vh, -1) or self._int_dim(pv.outputs[0], -1)
        eq, ek, ev = (self._int_dim(c.start, 2) for c in (qc, kc, vc))
        if not (d and dv and eq and ek and ev):
            raise _Reject("the head sizes or the projection widths are not static")
        if d != dv:
            raise _Reject(f"Q/K head size {d} differs from V head size {dv} (FP8Attention needs D = Dv)")
        if d > MAX_HEAD_SIZE:
            raise _Reject(f"head size {d} is larger than {MAX_HEAD_SIZE}, the GPU kernels' limit")
        packed = self._packed(qc, kc, vc)
        if packed and eq % (3 * d):
            raise _Reject(f"the packed projection's width {eq} is not 3 * heads * {d}")
        if not packed and (eq % d or eq != ek or ev % dv or eq // d != ev // dv):
            raise _Reject(f"projection widths Q {eq}, K {ek}, V {ev} do not split into the same heads of {d}")
        heads = eq // (3 * d) if packed else eq // d
        self._orient(qc, kc, vc, heads, d, packed)
        keys = "S" if packed else "T"  # a packed projection's keys are its queries
        self._follow(kc, self._projection(keys, packed), (("B",), ("H",), ("D",), (keys,)), "the key")
        self._follow(vc, self._projection(keys, packed), (("B",), ("H",), (keys,), ("D",)), "the value")
        for n in [qk, *score_nodes, sm, *probs]:
            self._set_layout(n.outputs[0], (("B",), ("H",), ("S",), ("T",)))
        self._set_layout(pv.outputs[0], _BHSD)
        oc = self._chain_forward(pv.outputs[0], _BHSD)
        out_shape = self._output_shape(self._layout_of(oc.values[-1])) if self.sequence_first else None
        if bias is not None:
            self._check_bias(bias)
        # every value between the projections and the output dies with the block
        self.nodes = [*qc.nodes, *kc.nodes, *vc.nodes, qk, *score_nodes, sm, *probs, pv, *oc.nodes]
        self.inner = [*qc.values, *kc.values, *vc.values, qk.outputs[0]]
        self.inner += [o for n in [*score_nodes, sm, *probs, pv] for o in n.outputs] + oc.values[:-1]
        extra = self._dead_shape_readers()
        return _Block(
            softmax=sm,
            q=qc.start,
            k=kc.start,
            v=vc.start,
            bias=bias,
            out=oc.values[-1],
            num_heads=heads,
            head_size=d,
            scale=float(np.float32(qc.scale * kc.scale * score_scale)),
            nan_to_zero=nan_to_zero,
            nodes=list({id(n): n for n in self.nodes + extra}.values()),
            sequence_first=self.sequence_first,
            out_shape=out_shape,
            packed=packed,
        )

    def _orient(self, qc: _Chain, kc: _Chain, vc: _Chain, heads: int, d: int, packed: bool) -> None:
        """Tell batch-first projections ``[B, S, H*D]`` from sequence-first ones ``[S, B, H*D]``
        (``nn.MultiheadAttention``, whose ``batch_first=True`` transposes its input first): the two axes are labelled
        either way and the query's chain must prove the head split ``[B, H, S, D]`` for one labelling. A proof under
        either is sound, and the layouts track positions, so both can hold only where B and S are both 1. Where
        neither does, the batch-first reason is the block's, as it was before sequence-first blocks were matched."""
        reason = None
        for sequence_first in (False, True):
            self.sequence_first = sequence_first
            self.layouts.clear()  # the other labelling's layouts name other axes
            b, s = (1, 0) if sequence_first else (0, 1)
            self.sizes = {
                "B": self._int_dim(qc.start, b),
                "S": self._int_dim(qc.start, s),
                "T": self._int_dim(kc.start, s),
                "H": heads,
                "D": d,
                "P": 3,
            }
            self.anchors = [(c.start, b, ("B",)) for c in (qc, kc, vc)]
            self.anchors += [(qc.start, s, ("S",))]
            if not packed:
                self.anchors += [(kc.start, s, ("T",)), (vc.start, s, ("T",))]
            try:
                self._same_dims(qc.start, kc.start, vc.start, b, s)
                self._follow(qc, self._projection("S", packed), _BHSD, "the query")
                return
            except _Reject as why:
                reason = reason or why
        raise reason

    def _projection(self, length: str, packed: bool = False) -> Layout:
        """The layout of a 3-D projection of a sequence of ``length``; ``packed``: the query, key and value
        projections side by side (the factor ``P`` of size 3 counts them)."""
        seq = ((length,), ("B",)) if self.sequence_first else (("B",), (length,))
        return (*seq, ("P", "H", "D") if packed else ("H", "D"))

    @staticmethod
    def _packed(qc: _Chain, kc: _Chain, vc: _Chain) -> bool:
        """Whether Q, K and V are picked from one packed projection (torchvision's Swin: ``reshape(B, S, 3, H, D)
        .permute(2, 0, 3, 1, 4)`` and ``qkv[0], qkv[1], qkv[2]``, Gathers of the leading axis). FP8Attention's packed
        form reads Q, K and V in that order, so the Gathers must pick the thirds 0, 1 and 2 of one tensor; that
        the picked axis is the one counting the thirds, ``P``, is proven when the chains are followed."""
        parts = [c.part for c in (qc, kc, vc)]
        if parts == [None, None, None]:
            return False
        if parts != [0, 1, 2] or not (qc.start is kc.start is vc.start):
            raise _Reject(f"Q, K and V are not the thirds 0, 1 and 2 of one packed projection (Gathers pick {parts})")
        return True

    def _output_shape(self, layout: Layout) -> list[int] | None:
        """The static target shape that gives a sequence-first output ``layout`` from ``[S, B, H*Dv]`` (None: it is
        that already): one dimension at most may be unknown (-1)."""
        if layout == self._projection("S"):
            return None
        dims = [-1 if any(self.sizes[f] is None for f in g) else math.prod(self.sizes[f] for f in g) for g in layout]
        if dims.count(-1) > 1:
            raise _Reject(f"the attention output {_show(layout)} has more than one dimension that is not static")
        return dims

    @staticmethod
    def _int_dim(v: ir.Value, axis: int) -> int | None:
        r = _rank(v)
        if r is None or not -r <= axis < r:
            return None
        d = v.shape[axis % r]
        return d if isinstance(d, int) else None

    # ------------------------------------------------------------------------- scores and probabilities
    def _scores(self, s: ir.Value) -> tuple[ir.Node, ir.Value | None, float, list[ir.Node]]:
        """Back from the Softmax input: ``MatMul -> (scalar Mul/Div)* -> Add(bias)?``."""
        nodes: list[ir.Node] = []
        bias, scale, v = None, 1.0, s
        node = v.producer()
        if (is_std(node, "Mul") or is_std(node, "Div")) and is_std(_producer_after_scales(v), "Add"):
            raise _Reject("the scores are scaled after the mask is added")
        if is_std(node, "Add"):
            a, b = node.inputs
            side = 0 if _leads_to_matmul(a) or not _leads_to_matmul(b) else 1
            bias, v = node.inputs[1 - side], node.inputs[side]
            nodes.append(node)
        while True:
            node = v.producer()
            if is_std(node, "Mul") or is_std(node, "Div"):
                c, v = self._scale_of(node, "the scores")
                scale *= c
                nodes.append(node)
            elif is_std(node, "MatMul"):
                nodes.reverse()
                return node, bias, scale, nodes
            elif not nodes and (regrouped := _regrouped_mask(node)) is not None:
                add, split = regrouped
                raise _Reject(
                    f"a mask is added to the scores reshaped to {_dims(split.outputs[0])} (Add {add.name} between "
                    f"Reshapes {split.name} and {node.name}): FP8Attention adds one attn_bias broadcast to "
                    "[B, H, S, T], and the pass does not build one from a mask added in another shape (Swin's shifted "
                    "windows add one per window of the batch axis B*nW)"
                )
            else:
                what = f"{node.op_type} {node.name}" if node is not None else "a graph input"
                raise _Reject(f"the scores come from {what}, not from a Q @ K MatMul (with a scale and a mask)")

    def _scale_of(self, node: ir.Node, what: str) -> tuple[float, ir.Value]:
        """(factor, data input) of a Mul or Div by a scalar constant."""
        a, b = node.inputs
        if node.op_type == "Mul":
            ca, cb = _scalar_const(a), _scalar_const(b)
            c, data, const = (cb, a, b) if cb is not None else (ca, b, a)
            constant = const_array(a) is not None or const_array(b) is not None
        else:
            c, data, const = _scalar_const(b), a, b
            c = None if c is None or c == 0.0 else 1.0 / c
            constant = const_array(b) is not None
        if c is None:
            kind = "a constant that is not one nonzero number" if constant else "a non-constant"
            raise _Reject(f"{what} are scaled by {kind} ({node.op_type} {node.name})")
        if not math.isfinite(c):
            raise _Reject(f"{what} are scaled by a non-finite constant ({node.op_type} {node.name})")
        rc, rd = _rank(const), _rank(data)
        if rc is None or rd is None or rc > rd:
            raise _Reject(f"the scale constant of {node.name} changes the rank")
        return c, data

    def _probabilities(self, sm: ir.Node) -> tuple[list[ir.Node], int, ir.Node]:
        """Forward from the Softmax: ``(IsNaN + Where(IsNaN(P), 0, P))? -> MatMul(P, Vh)``."""
        p = sm.outputs[0]
        if p.is_graph_output():
            raise _Reject("the attention probabilities are a graph output")
        uses = list(p.uses())
        readers = {(u.node.op_type, u.idx) for u in uses}
        if len(uses) == 1 and is_std(uses[0].node, "MatMul") and uses[0].idx == 0:
            return [], 0, uses[0].node
        if len(uses) == 2 and readers == {("IsNaN", 0), ("Where", 2)}:
            isnan = next(u.node for u in uses if u.node.op_type == "IsNaN")
            where = next(u.node for u in uses if u.node.op_type == "Where")
            if not (is_std(isnan, "IsNaN") and is_std(where, "Where")) or where.inputs[0] is not isnan.outputs[0]:
                raise _Reject("the attention probabilities have other readers")
            zero = const_array(where.inputs[1])
            if zero is None or zero.size != 1 or zero.ndim > 4 or zero.reshape(-1)[0] != 0 or np.signbit(zero).any():
                raise _Reject("Where(IsNaN(P), c, P) after the Softmax with c other than a constant 0")
            self._only_reader(isnan.outputs[0], where, "IsNaN(P)")
            out = where.outputs[0]
            if out.is_graph_output() or len(out.uses()) != 1:
                raise _Reject("the attention probabilities have other readers")
            use = next(iter(out.uses()))
            if not (is_std(use.node, "MatMul") and use.idx == 0):
                raise _Reject("the attention probabilities are not multiplied by V")
            return [isnan, where], 1, use.node
        raise _Reject("the attention probabilities have other readers")

    @staticmethod
    def _only_reader(v: ir.Value, reader: ir.Node, what: str) -> None:
        if v.is_graph_output() or any(u.node is not reader for u in v.uses()):
            raise _Reject(f"{what} has other readers")

    # ----------------------------------------------------------------------------------------- chains
    def _chain_back(self, end: ir.Value, what: str, scaled: bool) -> _Chain:
        """From the MatMul operand back through Reshape/Transpose (and scalar Mul/Div when ``scaled``) while each
        tensor has no other reader; the chain starts at its first 3-D tensor. One Gather of a constant index may be
        on the way, picking Q, K or V from a packed tensor: its input is read by the Gathers of the other two too
        (the check that the block's tensors have no readers outside it keeps that sound)."""
        steps: list[tuple[ir.Node, ir.Value, float]] = []  # (node, its data input, factor), end first
        v = end
        while True:
            node = v.producer()
            shared = False
            if is_std(node, "Reshape") or is_std(node, "Transpose"):
                data, factor = node.inputs[0], 1.0
            elif _picked(node) is not None and not any(s[0].op_type == "Gather" for s in steps):
                data, factor, shared = node.inputs[0], 1.0, True
            elif scaled and (is_std(node, "Mul") or is_std(node, "Div")):
                try:
                    factor, data = self._scale_of(node, f"the {what} values")
                except _Reject:
                    if _rank(v) == 3:  # an elementwise op on the 3-D projection: the chain starts after it
                        break
                    raise
            else:
                break
            steps.append((node, data, factor))
            if data.is_graph_output() or (len(self._data_readers(data)) != 1 and not shared):
                break  # read elsewhere too: the chain cannot start earlier
            v = data
        steps.reverse()
        for i, (_, data, _) in enumerate(steps):
            if _rank(data) == 3:
                kept = steps[i:]
                gathers = [s[0] for s in kept if s[0].op_type == "Gather"]
                return _Chain(
                    start=data,
                    nodes=[s[0] for s in kept],
                    values=[s[0].outputs[0] for s in kept],
                    scale=math.prod(s[2] for s in kept),
                    part=_picked(gathers[0]) if gathers else None,
                )
        raise _Reject(f"{what} heads do not come from a 3-D [B, S, H*D] tensor through Reshape/Transpose")

    def _chain_forward(self, start: ir.Value, layout: Layout) -> _Chain:
        """From the P @ V output through Reshape/Transpose to the first tensor laid out as [B, S, H*Dv]; for a
        sequence-first block, to the first holding S, B, H, Dv in row-major order with the heads side by side on the
        last axis (``nn.MultiheadAttention``'s out-projection reads ``[S*B, H*Dv]``)."""
        nodes, values, v = [], [], start
        while True:
            if v.is_graph_output():
                break
            readers = self._data_readers(v)
            if len(readers) != 1:
                break
            node = readers[0]
            if not (is_std(node, "Reshape") or is_std(node, "Transpose")) or node.inputs[0] is not v:
                break
            layout = self._apply(node, layout, "the attention output")
            nodes.append(node)
            values.append(node.outputs[0])
            v = node.outputs[0]
            self._set_layout(v, layout)
            if self._merged(layout):
                return _Chain(start, nodes, values)
        into = "[S, B, H*Dv] or [S*B, H*Dv]" if self.sequence_first else "[B, S, H*Dv]"
        raise _Reject(f"the attention output is not put back into {into} by Reshape/Transpose")

    def _merged(self, layout: Layout) -> bool:
        """Whether ``layout`` is the output FP8Attention's can replace: itself for a batch-first block, through a
        Transpose and a Reshape for a sequence-first one."""
        if not self.sequence_first:
            return layout == self._projection("S")
        return layout[-1] == ("H", "D") and [f for g in layout for f in g] == ["S", "B", "H", "D"]

    @staticmethod
    def _data_readers(v: ir.Value) -> list[ir.Node]:
        """The nodes reading v, ``Shape`` nodes left out (checked later: they must die with the block)."""
        out: list[ir.Node] = []
        for u in v.uses():
            if not is_std(u.node, "Shape") and all(u.node is not n for n in out):
                out.append(u.node)
        return out

    def _follow(self, chain: _Chain, layout: Layout, want: Layout, what: str) -> None:
        self._set_layout(chain.start, layout)
        for node, out in zip(chain.nodes, chain.values):
            if node.op_type in ("Reshape", "Transpose", "Gather"):
                layout = self._apply(node, layout, what)
            self._set_layout(out, layout)
        if layout != want:
            raise _Reject(f"{what} is laid out as {_show(layout)}, not {_show(want)}")

    def _set_layout(self, v: ir.Value, layout: Layout) -> None:
        self.layouts[id(v)] = (v, layout)

    def _layout_of(self, v: ir.Value) -> Layout | None:
        hit = self.layouts.get(id(v))
        return hit[1] if hit is not None and hit[0] is v else None

    def _apply(self, node: ir.Node, layout: Layout, what: str) -> Layout:
        if node.op_type == "Transpose":
            perm = _perm(node, len(layout))
            if perm is None or sorted(perm) != list(range(len(layout))):
                raise _Reject(f"Transpose {node.name} of {what} has a perm that does not fit its rank")
            return tuple(layout[p] for p in perm)
        if node.op_type == "Gather":  # one of Q, K, V from the axis counting them: that axis goes
            axis = int(attr_value(node, "axis", 0))
            if not -len(layout) <= axis < len(layout) or layout[axis] != ("P",):
                raise _Reject(f"Gather {node.name} of {what} does not pick from the axis of a packed Q, K, V")
            return layout[: axis % len(layout)] + layout[axis % len(layout) + 1 :]
        return self._reshape(node, layout, what)

    # ---------------------------------------------------------------------------------------- reshapes
    def _reshape(self, node: ir.Node, layout: Layout, what: str) -> Layout:
        """The layout after a Reshape: each target dimension takes the next factors of the row-major order."""
        elems = self.shapes.shape_elements(node.inputs[1])
        if elems is None:
            raise _Reject(f"the target shape of Reshape {node.name} ({what}) is not known")
        allowzero = int(attr_value(node, "allowzero", 0))
        specs: list[tuple[str, object]] = []
        for i, e in enumerate(elems):
            if isinstance(e, _Prod):
                specs.append(("product", [self._part(p, node) for p in e.parts]))
                continue
            if isinstance(e, _Dim):
                kind, e = self._part(e, node)
                if kind == "groups":
                    specs.append((kind, e))
                    continue
            if e == 0 and not allowzero:
                if i >= len(layout):
                    raise _Reject(f"Reshape {node.name} copies a dimension its input lacks")
                specs.append(("groups", {layout[i]}))
            elif e == -1:
                specs.append(("rest", None))
            elif e >= 1:
                specs.append(("int", e))
            else:
                raise _Reject(f"Reshape {node.name} ({what}) has a target dimension {e}")
        rest = [i for i, s in enumerate(specs) if s[0] == "rest"]
        if len(rest) > 1:
            raise _Reject(f"Reshape {node.name} has more than one -1")
        factors = [f for g in layout for f in g]
        cut = rest[0] if rest else len(specs)
        front, p = [], 0
        for spec in specs[:cut]:
            g, p = self._take(factors, p, spec, node, forward=True)
            front.append(g)
        back, q = [], len(factors)
        for spec in reversed(specs[cut + 1 :]):
            g, q = self._take(factors, q, spec, node, forward=False)
            back.insert(0, g)
        if q < p or (not rest and p != len(factors)):
            raise _Reject(f"Reshape {node.name} ({what}) does not line up with the heads")
        middle = [tuple(factors[p:q])] if rest else []
        return tuple(front + middle + back)

    def _part(self, e: _Dim | int, node: ir.Node) -> tuple[str, object]:
        """The spec of a dimension from a shape or a positive int (a factor of a product)."""
        d = _dim(e.value, e.axis) if isinstance(e, _Dim) else e
        return ("int", d) if isinstance(d, int) else ("groups", self._resolve(e, node))

    def _take(self, factors: list[str], pos: int, spec, node: ir.Node, forward: bool) -> tuple[tuple[str, ...], int]:
        kind, arg = spec
        step = 1 if forward else -1
        if kind == "product":  # the parts multiply in any order: each must take the next factors in one of them
            for order in itertools.permutations(arg):
                end = pos
                try:
                    for part in order:
                        end = self._take(factors, end, part, node, forward)[1]
                except _Reject:
                    continue
                return tuple(factors[min(pos, end) : max(pos, end)]), end
            raise _Reject(f"Reshape {node.name}: a product of dimensions does not line up with the heads")

        def window(n: int) -> tuple[str, ...] | None:
            lo, hi = (pos, pos + n) if forward else (pos - n, pos)
            return tuple(factors[lo:hi]) if 0 <= lo <= hi <= len(factors) else None

        if kind == "groups":
            for g in sorted(arg):
                if window(len(g)) == g:
                    return g, pos + step * len(g)
            raise _Reject(f"Reshape {node.name}: a dimension from a shape does not line up with the heads")
        product, taken, k = 1, 0, arg
        while product < k:
            w = window(taken + 1)
            size = None if w is None else self.sizes.get(w[-1] if forward else w[0])
            if not size:
                raise _Reject(f"Reshape {node.name}: static dimension {k} does not line up with the heads")
            product *= size
            taken += 1
        if k == 1:  # a unit axis: it takes a factor of size 1 if one comes next
            w = window(1)
            if w is not None and self.sizes.get(w[0]) == 1:
                taken = 1
        if product != k:
            raise _Reject(f"Reshape {node.name}: static dimension {k} does not line up with the heads")
        return window(taken), pos + step * taken

    def _resolve(self, e: _Dim, node: ir.Node) -> set[tuple[str, ...]]:
        """The factor groups a symbolic target dimension ``Shape(x)[i]`` can be."""
        lay = self._layout_of(e.value)
        if lay is not None and e.axis < len(lay):
            return {lay[e.axis]}
        found = {g for v, i, g in self.anchors if self.shapes.equal(e.value, e.axis, v, i)}
        if not found:
            raise _Reject(
                f"cannot tell which dimension {e.value.name}[{e.axis}] in the target shape of Reshape {node.name} is"
            )
        return found

    # ------------------------------------------------------------------------------------- other checks
    def _same_dims(self, q: ir.Value, k: ir.Value, v: ir.Value, batch: int, length: int) -> None:
        eq = self.shapes.equal
        if not (eq(q, batch, k, batch) and eq(q, batch, v, batch)):
            raise _Reject("cannot show that Q, K and V have the same batch size")
        if not eq(k, length, v, length):
            raise _Reject("cannot show that K and V have the same length")

    def _check_bias(self, bias: ir.Value) -> None:
        if bias.dtype != ir.DataType.FLOAT:
            raise _Reject(f"the mask {bias.name} is {bias.dtype}, not float32")
        r = _rank(bias)
        if r is None or not 1 <= r <= 4:
            raise _Reject(f"the mask {bias.name} has rank {r if r is not None else 'unknown'}, not 1 to 4")
        scores = ["B", "H", "S", "T"][4 - r :]
        for d, f in zip(bias.shape, scores):
            size = self.sizes.get(f)
            if isinstance(d, int) and d != 1 and size is not None and d != size:
                raise _Reject(f"the mask {bias.name} {list(bias.shape)} does not broadcast to the scores")

    def _dead_shape_readers(self) -> list[ir.Node]:
        """The Shape nodes reading the block's inner tensors, and what computes from them: they must only feed
        nodes of the block (the target shapes of its Reshapes). Returned to be removed with the block."""
        block = {id(n) for n in self.nodes}
        for v in self.inner:
            if v.is_graph_output():
                raise _Reject(f"{v.name} inside the attention block is a graph output")
            if any(id(u.node) not in block and not is_std(u.node, "Shape") for u in v.uses()):
                raise _Reject(f"{v.name} inside the attention block has other readers")
        todo = [u.node for v in self.inner for u in v.uses() if is_std(u.node, "Shape")]
        extra: dict[int, ir.Node] = {}
        while todo:
            n = todo.pop()
            if id(n) in extra or id(n) in block:
                continue
            extra[id(n)] = n
            for o in n.outputs:
                if o.is_graph_output():
                    raise _Reject(f"the shape of a tensor inside the attention block is a graph output ({o.name})")
                todo += [u.node for u in o.uses()]
        alive = block | set(extra)
        for n in extra.values():
            for o in n.outputs:
                if any(id(u.node) not in alive for u in o.uses()):
                    raise _Reject(f"the shape of a tensor inside the attention block is read elsewhere ({o.name})")
        return list(extra.values())


def _show(layout: Layout) -> str:
    return "[" + ", ".join("*".join(g) if g else "1" for g in layout) + "]"


def _dims(v: ir.Value) -> str:
    """The shape of v as the reasons show it, ``?`` for an unknown dimension."""
    if v.shape is None:
        return "an unknown shape"
    return "[" + ", ".join(str(d) if isinstance(d, int) else "?" for d in v.shape) + "]"


def _regrouped_mask(node: ir.Node | None) -> tuple[ir.Node, ir.Node] | None:
    """(the Add, the Reshape before it) where ``node`` is a Reshape of ``Add(Reshape(scores), mask)``: a mask
    added to the scores regrouped, as torchvision's shifted-window attention adds its per-window mask to
    ``attn.view(B, nW, H, N, N)``; else None."""
    add = node.inputs[0].producer() if is_std(node, "Reshape") and node.inputs[0] is not None else None
    if not is_std(add, "Add"):
        return None
    for x in add.inputs:
        split = x.producer() if x is not None else None
        if is_std(split, "Reshape") and _rank(split.inputs[0]) == 4:
            return add, split
    return None


def _producer_after_scales(v: ir.Value) -> ir.Node | None:
    """The producer of v behind scalar Mul/Div nodes."""
    node = v.producer()
    for _ in range(8):
        if not (is_std(node, "Mul") or is_std(node, "Div")):
            return node
        data = [x for x in node.inputs if const_array(x) is None]
        if len(data) != 1:
            return node
        node = data[0].producer()
    return node


def _picked(node: ir.Node | None) -> int | None:
    """The index, 0 to 2, of a Gather of one constant scalar index in range for an axis of 3, else None: the Gather
    that may pick Q, K or V from a packed tensor."""
    if not is_std(node, "Gather") or len(node.inputs) != 2:
        return None
    idx = const_array(node.inputs[1])
    if idx is None or idx.ndim != 0 or idx.dtype.kind not in "iu" or not -3 <= int(idx) < 3:
        return None
    return int(idx) % 3


def _leads_to_matmul(v: ir.Value | None) -> bool:
    """Whether v is an activation x activation MatMul output, behind Mul/Div nodes."""
    node = _producer_after_scales(v) if v is not None else None
    return is_std(node, "MatMul") and all(const_array(x) is None for x in node.inputs)


def _is_candidate(sm: ir.Node) -> bool:
    """A Softmax next to an activation x activation MatMul (before it, behind Add/Mul/Div, or after it, behind
    IsNaN/Where): an attention block, fused or given a reason. Other Softmaxes (classifier heads) are ignored."""
    v = sm.inputs[0]
    node = v.producer() if v is not None else None
    if is_std(node, "Add"):
        if any(_leads_to_matmul(x) for x in node.inputs):
            return True
    elif _leads_to_matmul(v):
        return True
    todo, seen = [sm.outputs[0]], 0
    while todo and seen < 8:
        seen += 1
        for u in todo.pop().uses():
            n = u.node
            if is_std(n, "MatMul") and u.idx == 0 and const_array(n.inputs[1]) is None:
                return True
            if is_std(n, "IsNaN") or is_std(n, "Where"):
                todo.append(n.outputs[0])
    return False


class Fp8AttentionPass(ir.passes.InPlacePass):
    """Replace each multi-head attention block by one ``com.fp8ort.FP8Attention`` (see the module docstring).

    ``fp8_output``: let the FP8Attention write FP8 for FP8MatMul readers (``QuantizeConfig.fp8_activations``).
    A Softmax of an attention block that stays unfused gets its reason in ``node.meta[ATTENTION_REASON_KEY]``; a
    fused block's FP8Attention takes the Softmax's name and lists the nodes it replaced in
    ``node.meta[ATTENTION_NODES_KEY]``.
    """

    def __init__(self, fp8_output: bool = True) -> None:
        super().__init__()
        self.fp8_output = fp8_output

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        opset = int(model.opset_imports.get("", model.opset_imports.get("ai.onnx", 21)))
        modified = False
        for node in list(model.graph):
            if node.graph is None or not is_std(node, "Softmax") or not _is_candidate(node):
                continue
            try:
                block = _Matcher(node, _Shapes(), opset).match()
            except _Reject as why:
                node.meta[ATTENTION_REASON_KEY] = str(why)
                continue
            self._rewrite(model.graph, block)
            modified = True
        if modified:
            model.opset_imports.setdefault(FP8ORT_DOMAIN, 1)
            model.graph.opset_imports.setdefault(FP8ORT_DOMAIN, 1)
        return ir.passes.PassResult(model, modified)

    def _fp8_output(self, out: ir.Value) -> tuple[ir.DataType, ir.Value] | None:
        """(FP8 type, y_scale) when every reader of ``out`` is an FP8MatMul reading it as a float A with one
        constant a_scale and one FP8 weight format."""
        if not self.fp8_output or out.is_graph_output() or not out.uses() or out.dtype != ir.DataType.FLOAT:
            return None
        scales, formats, first = set(), set(), None
        for u in out.uses():
            n = u.node
            if not (n.domain == FP8ORT_DOMAIN and n.op_type == "FP8MatMul" and u.idx == 0 and len(n.inputs) > 2):
                return None
            scale = _scalar_const(n.inputs[2])
            if scale is None or n.inputs[1] is None or n.inputs[1].dtype is None:
                return None
            scales.add(scale)
            formats.add(n.inputs[1].dtype)
            first = n if first is None else first
        if len(scales) != 1 or len(formats) != 1 or not nx.is_fp8(int(next(iter(formats)))):
            return None
        return next(iter(formats)), first.inputs[2]

    def _rewrite(self, graph: ir.Graph, b: _Block) -> None:
        old = b.out
        fp8 = None if b.sequence_first else self._fp8_output(old)  # a Transpose reads a sequence-first output
        out_type = fp8[0] if fp8 is not None else ir.DataType.FLOAT
        name, value_name = b.softmax.name, old.name
        added: list[ir.Node] = []
        q, k, v = (b.q, None, None) if b.packed else (b.q, b.k, b.v)
        if b.sequence_first:
            q, k, v = (
                None if x is None else _swap_axes(x, f"{name}.{what}_batch_first", added)
                for x, what in ((q, "q"), (k, "k"), (v, "v"))
            )
        inputs = [q, k, v, b.bias, fp8[1] if fp8 is not None else None]
        while inputs[-1] is None:
            inputs.pop()
        attrs = [
            ir.AttrInt64("num_heads", b.num_heads),
            ir.AttrFloat32("scale", b.scale),
            ir.AttrInt64("nan_to_zero", b.nan_to_zero),
            ir.AttrInt64("output_dtype", int(out_type)),
        ]
        shape = old.shape
        if b.sequence_first:
            shape = None if q.shape is None else ir.Shape([*q.shape[:2], b.num_heads * b.head_size])
        y = ir.Value(name=f"{value_name}.fp8ort", type=ir.TensorType(out_type), shape=shape)
        replaced = [n.name for n in b.nodes]
        for n in b.nodes:
            n.name = f"{n.name}.replaced"
        node = ir.Node(FP8ORT_DOMAIN, "FP8Attention", inputs, attrs, outputs=[y], name=name)
        node.meta[ATTENTION_NODES_KEY] = replaced
        node.meta[ATTENTION_INFO_KEY] = (
            f"FP8Attention: {b.num_heads} heads of {b.head_size}, scale {b.scale:.6g}"
            + (", NaN rows to zero" if b.nan_to_zero else "")
            + (", Q, K and V packed in one projection" if b.packed else "")
            + (", mask" if b.bias is not None else "")
            + (f", {out_type.name} output for the FP8MatMul reading it" if fp8 is not None else ", float output")
            + (", sequence-first: Q, K, V and the output transposed" if b.sequence_first else "")
        )
        added.append(node)
        out = y
        if b.sequence_first:
            out = _swap_axes(y, f"{name}.output_sequence_first", added)
            if b.out_shape is not None:
                target = new_initializer(graph, f"{name}.output_shape", np.array(b.out_shape, np.int64))
                merged = ir.Value(name=f"{name}.output_merged", type=old.type, shape=old.shape)
                added.append(ir.Node("", "Reshape", [out, target], outputs=[merged], name=f"{name}.output_merged"))
                out = merged
        graph.insert_before(old.producer(), added)
        ir.convenience.replace_all_uses_with(old, out, replace_graph_outputs=True)
        graph.remove(b.nodes, safe=True)
        out.name = value_name


def _swap_axes(x: ir.Value, name: str, added: list[ir.Node]) -> ir.Value:
    """The 3-D ``x`` with its first two axes swapped ([S, B, N] <-> [B, S, N]) by a Transpose ``name`` appended to
    ``added``; its output is named ``name`` too."""
    shape = None if x.shape is None else ir.Shape([x.shape[1], x.shape[0], x.shape[2]])
    out = ir.Value(name=name, type=x.type, shape=shape)
    added.append(ir.Node("", "Transpose", [x], [ir.AttrInt64s("perm", [1, 0, 2])], outputs=[out], name=name))
    return out
