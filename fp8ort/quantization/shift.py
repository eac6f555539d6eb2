"""Activation mean shift: take the per-channel mean out of an FP8 layer input where the graph can absorb it exactly.

FP8 rounding error is relative to a value's magnitude. An input whose channels sit on a large constant offset
(PP-OCR's learnable affine ``x * a + b`` in front of each pointwise conv, a linear conv output) loses its variation
to the rounding of the offset: the error is ~2^-4 of ``|mean + variation|`` while only the variation carries
information. Quantizing ``x - mu`` (``mu`` the per-channel calibration mean) instead keeps that error relative to
the variation. The transform changes float constants only, adds no node, and keeps the float model's function:

- the producer of ``x`` is an ``Add`` with a constant operand ``c`` (``c - mu``, broadcast per channel) or a
  ``Conv`` with a constant bias (``b - mu``), whose output is not a graph output;
- every reader of ``x`` is a weight layer reading it as its input, whose sum over ``x`` has no zero padding (a
  ``Conv`` with all pads 0, a ``Gemm``, a ``MatMul`` followed by a bias ``Add``), so ``W (x - mu) + (b + W mu)``
  equals ``W x + b`` everywhere: the bias of each reader gets ``W mu``.

A value is shifted only where it pays: the FP8 rounding error of ``x - mu`` (scale from its range) against that of
``x`` (scale from its range), both measured on the first calibration batch relative to the centered signal, must
drop by ``MIN_GAIN_DB``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import onnx_ir as ir

from .. import numerics as nx
from . import model_io as mio
from .prepare import const_array, is_std, new_initializer
from .rules import Group

if TYPE_CHECKING:
    from . import calibration as cal

MIN_GAIN_DB = 1.0  # least reduction of the input's FP8 rounding noise for which a value is shifted


@dataclasses.dataclass
class _Candidate:
    value: ir.Value
    producer: ir.Node
    readers: list[Group]
    axis: int  # channel axis of the value (1: NCHW conv input, -1: Gemm/MatMul input)


def _reader_ok(g: Group) -> bool:
    """Whether ``g``'s sum over its input has no padding, and its bias can take ``W mu``."""
    if g.kind == "Conv":
        return all(p == 0 for p in g.conv.pads)
    if g.kind == "Gemm":
        return True
    return g.fused_bias  # MatMul: its bias Add takes the correction


def _producer_ok(node: ir.Node | None, v: ir.Value) -> bool:
    if node is None or len(node.outputs) != 1 or v.is_graph_output():
        return False
    if is_std(node, "Add"):
        consts = [const_array(i) for i in node.inputs]
        return len(node.inputs) == 2 and sum(c is not None for c in consts) == 1
    if is_std(node, "Conv"):
        return len(node.inputs) > 2 and node.inputs[2] is not None and const_array(node.inputs[2]) is not None
    return False


def candidates(graph: ir.Graph, groups: list[Group]) -> list[_Candidate]:
    """Values the graph can shift exactly (see the module docstring)."""
    by_anchor = {id(g.anchor): g for g in groups}
    out: list[_Candidate] = []
    seen: set[str] = set()
    for g in groups:
        v = g.x
        if v.name in seen or v.const_value is not None:
            continue
        seen.add(v.name)
        if not _producer_ok(v.producer(), v):
            continue
        readers = []
        for use in v.uses():
            r = by_anchor.get(id(use.node))
            if r is None or use.idx != 0 or not _reader_ok(r) or r in readers:
                readers = []
                break
            readers.append(r)
        if not readers or len({r.kind == "Conv" for r in readers}) != 1:
            continue
        if v.shape is None or (readers[0].kind == "Conv" and len(v.shape) != 4):
            continue
        out.append(_Candidate(v, v.producer(), readers, 1 if readers[0].kind == "Conv" else -1))
    return out


class _Stats:
    def __init__(self) -> None:
        self.sum: np.ndarray | float = 0.0
        self.n = 0
        self.lo: np.ndarray | None = None
        self.hi: np.ndarray | None = None
        self.first: np.ndarray | None = None

    def add(self, a: np.ndarray, axis: int) -> None:
        m = np.moveaxis(np.asarray(a, np.float64), axis, -1).reshape(-1, a.shape[axis])
        self.sum = self.sum + m.sum(axis=0)
        self.n += m.shape[0]
        lo, hi = m.min(axis=0), m.max(axis=0)
        self.lo = lo if self.lo is None else np.minimum(self.lo, lo)
        self.hi = hi if self.hi is None else np.maximum(self.hi, hi)
        if self.first is None:
            self.first = m

    @property
    def mean(self) -> np.ndarray:
        return np.asarray(self.sum) / max(self.n, 1)


def _noise(m: np.ndarray, amax: float, fmt: nx.FP8Format, power_of_two: bool) -> float:
    s = nx.compute_scale(np.float32(amax), fmt, power_of_two)  # the scale the emitter makes of this range
    a = m.astype(np.float32)
    return float(np.sum(np.square(nx.dequantize(nx.quantize(a, s, fmt), s).astype(np.float64) - a)))


def gain_db(st: _Stats, fmt: nx.FP8Format, power_of_two: bool = False) -> float:
    """Reduction (dB) of the FP8 rounding noise on the first calibration batch when ``x - mean`` is quantized
    (``power_of_two``: both with activation scales rounded up to a power of two, as emitted)."""
    mu = st.mean
    amax = float(max(np.max(np.abs(st.lo)), np.max(np.abs(st.hi))))
    amax_shift = float(np.max(np.maximum(st.hi - mu, mu - st.lo)))
    before = _noise(st.first, amax, fmt, power_of_two)
    after = _noise(st.first - mu, amax_shift, fmt, power_of_two)
    if after <= 0.0:
        return float("inf") if before > 0 else 0.0
    return 10.0 * np.log10(max(before, 1e-300) / after)


def _reader_delta(g: Group, mu: np.ndarray) -> np.ndarray:
    """``W mu`` per output channel of reader ``g`` (in float64)."""
    w = g.weight.astype(np.float64)
    if g.kind == "Conv":
        groups = int(g.conv.group)
        m, cpg = w.shape[:2]
        mu_out = np.repeat(mu.reshape(groups, cpg), m // groups, axis=0)  # [M, C/group]
        return np.sum(w.sum(axis=(2, 3)) * mu_out, axis=1)
    return mu @ (w.T if g.trans_b else w)  # Gemm (alpha is in g.weight) and MatMul: [K] @ [K, N]


def _set_input(graph: ir.Graph, node: ir.Node, idx: int, name: str, array: np.ndarray) -> None:
    if len(node.inputs) <= idx:
        node.resize_inputs(idx + 1)
    node.replace_input_with(idx, new_initializer(graph, name, array.astype(np.float32)))


def _apply(graph: ir.Graph, c: _Candidate, mu: np.ndarray) -> None:
    p = c.producer
    if is_std(p, "Add"):
        idx = 0 if const_array(p.inputs[0]) is not None else 1
        k = const_array(p.inputs[idx]).astype(np.float64)
        rank = len(c.value.shape)
        new = k - (mu.reshape([-1] + [1] * (rank - 2)) if c.axis == 1 else mu)  # broadcast per channel
        _set_input(graph, p, idx, f"{p.name}.shifted", new)
    else:  # Conv with a constant bias (its output channels are the value's axis 1)
        _set_input(graph, p, 2, f"{p.name}.B_shifted", const_array(p.inputs[2]).astype(np.float64) - mu)
    for g in c.readers:
        delta = _reader_delta(g, mu)
        a = g.anchor
        if g.kind == "Conv":
            b = const_array(a.inputs[2]) if len(a.inputs) > 2 and a.inputs[2] is not None else None
            base = np.zeros(delta.shape) if b is None else b.astype(np.float64).reshape(-1)
            _set_input(graph, a, 2, f"{g.name}.B_shift", base + delta)
        elif g.kind == "Gemm":
            beta = a.attributes.get_float("beta", 1.0)
            cc = const_array(a.inputs[2]) if len(a.inputs) > 2 and a.inputs[2] is not None else None
            if cc is None:
                a.attributes.pop("beta", None)
                _set_input(graph, a, 2, f"{g.name}.C_shift", delta)
            else:
                base = np.broadcast_to(cc.astype(np.float64).reshape(-1), delta.shape)
                _set_input(graph, a, 2, f"{g.name}.C_shift", base + delta / beta)
        else:  # MatMul + bias Add
            add = g.nodes[1]
            idx = 0 if const_array(add.inputs[0]) is not None else 1
            k = const_array(add.inputs[idx]).astype(np.float64)
            _set_input(graph, add, idx, f"{add.name}.shifted", k + delta.reshape((1,) * (k.ndim - 1) + (-1,)))


def shift_activations(
    model: ir.Model, groups: list[Group], feeds: list[cal.Feed], fmt: nx.FP8Format, power_of_two: bool = False
) -> dict[str, float]:
    """Shift the inputs that gain (in place on ``model``, matched as ``groups``; ``power_of_two``: the activation
    scales' rule, ``QuantizeConfig.power_of_two_scales``); returns {value: gain dB}."""
    cands = candidates(model.graph, groups)
    if not cands or not feeds:
        return {}
    names = [c.value.name for c in cands]
    sess = mio.Session(mio.with_outputs(model, names))
    stats = {n: _Stats() for n in names}
    for feed in feeds:
        got = sess.run(feed, names)
        for c in cands:
            stats[c.value.name].add(got[c.value.name], c.axis)
    done: dict[str, float] = {}
    for c in cands:
        st = stats[c.value.name]
        if st.n == 0 or not np.all(np.isfinite(st.mean)):
            continue
        gain = gain_db(st, fmt, power_of_two)
        if gain >= MIN_GAIN_DB:
            _apply(model.graph, c, st.mean)
            done[c.value.name] = gain
    return done
