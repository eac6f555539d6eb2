"""One projection for the query, key and value of a self-attention block (FP8Attention's packed form).

Two exporter forms lead there. Encoders with three projections (Hugging Face BERT) are packed by ``PackQkvPass``
below. Vision transformers (timm ViT/DeiT) project once, ``qkv = Linear(x)`` of width ``3*H*D``, and split the heads
with ``reshape(B, S, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)``, exported as Reshape, Transpose, Split and three
Squeezes; ``SplitQkvHeadsPass`` rewrites that into a Slice, Reshape and Transpose per tensor (the head split the
attention fusion follows), and ``PackQkvPass`` then hands FP8Attention the projection itself when its Q, K and V are
the three thirds of one tensor.

An encoder computes Q, K and V from one tensor: three FP8MatMuls with the same ``A`` and ``a_scale``, each with its
own ``[K, N]`` weight, per-column ``b_scale`` and bias, writing float32 ``[B, S, N]`` for one FP8Attention. Where that
holds, ``PackQkvPass`` puts the three weights, scales and biases side by side in one FP8MatMul (``N`` -> ``3N``) whose
``[B, S, 3N]`` output FP8Attention reads in its packed form (``K`` and ``V`` absent, docs/operators.md).

Each output column is computed as before: the same sum over ``K`` of the same FP8 products, times the same
``a_scale * b_scale[n]``, plus the same ``bias[n]`` (bit-identical on the CPU kernels; GPU kernels may sum in another
order for another ``N``, as the contract's float32 accumulation allows). The GPU runs one GEMM with one epilogue
instead of three of each, for wider tiles at large batch and a third of the launches at batch 1.

``Float16QkvPass`` then lets those projections write float16 for the attention (``QuantizeConfig.attention_float16``):
half the bytes written and read, and a GPU kernel can run the attention's products on FP16 tensor cores (float32
attention was BERT-base's largest item on an H100, 115 us per layer). float16 holds the projections' values to a
relative 2^-11, far below the FP8 rounding of their inputs; its range ends at 65504, so a projection whose output
the calibration data saw above ``FLOAT16_QKV_LIMIT`` keeps float32, and the report says which with the maximum.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx_ir as ir

from .attention import ATTENTION_INFO_KEY
from .prepare import attr_value, const_array, is_std, new_initializer, single_consumer

FP8ORT_DOMAIN = "com.fp8ort"
QKV_SOURCES_KEY = "fp8ort.qkv_sources"  # packed FP8MatMul node.meta: the calibrated outputs of the three it replaced
# The largest |x| a projection's output may have reached on the calibration data for it to be written in float16: a
# quarter of float16's largest finite value (65504), headroom for inputs a little beyond the calibration data's.
FLOAT16_QKV_LIMIT = 16384.0


def _projection(v: ir.Value | None, attn: ir.Node) -> ir.Node | None:
    """The FP8MatMul writing ``v`` as a plain float32 projection (no residual, activation or FP8 output) read only by
    ``attn``; else None."""
    p = None if v is None else v.producer()
    if p is None or p.domain != FP8ORT_DOMAIN or p.op_type != "FP8MatMul" or single_consumer(v) is not attn:
        return None
    if any(x is not None for x in p.inputs[5:]) or p.inputs[0] is None or p.inputs[2] is None:
        return None
    if attr_value(p, "activation", "") not in ("", b"") or attr_value(p, "output_dtype", 1) != ir.DataType.FLOAT:
        return None
    return p


def _same_scale(a: ir.Value, b: ir.Value) -> bool:
    if a is b:
        return True
    x, y = const_array(a), const_array(b)
    return x is not None and y is not None and x.size == y.size == 1 and x.tobytes() == y.tobytes()


def _static_dims(v: ir.Value | None) -> list[int | None] | None:
    if v is None or v.shape is None:
        return None
    return [d if isinstance(d, int) else None for d in v.shape]


def _int_list(node: ir.Node, i: int) -> list[int] | None:
    a = const_array(node.inputs[i]) if len(node.inputs) > i and node.inputs[i] is not None else None
    return None if a is None or a.dtype.kind not in "iu" else [int(x) for x in a.reshape(-1)]


class SplitQkvHeadsPass(ir.passes.InPlacePass):
    """``X [B, S, 3*H*D] -> Reshape [B, S, 3, H, D] -> Transpose (2, 0, 3, 1, 4) -> unbind(0)`` -> per tensor ``Slice
    (third i of the last axis) -> Reshape [0, 0, H, D] -> Transpose (0, 2, 1, 3)``: the same values, in the form of a
    separate projection's head split. ``unbind(0)`` is a Split into three along axis 0 (TorchScript exporter) or three
    Slices ``[i:i+1]`` of axis 0 (dynamo exporter), each followed by a Squeeze of axis 0. Only where every intermediate
    tensor has no other reader and the sizes are static (3, H and D; B and S may be symbolic)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for t in list(model.graph):
            if is_std(t, "Transpose") and self._rewrite(model.graph, t):
                modified = True
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _unbind(t: ir.Node) -> tuple[list[ir.Node], list[ir.Node]] | None:
        """(the three Squeezes in order, the Split or Slices before them) of an unbind(0) of t's output."""
        out = t.outputs[0]
        if out.is_graph_output():
            return None
        readers = [u.node for u in out.uses()]
        parts: list[ir.Node | None] = [None, None, None]
        if len(readers) == 1 and is_std(readers[0], "Split"):
            split = readers[0]
            sizes = _int_list(split, 1)
            if len(split.outputs) != 3 or attr_value(split, "axis", 0) != 0:
                return None
            if len(split.inputs) > 1 and split.inputs[1] is not None and sizes != [1, 1, 1]:
                return None
            cuts, parts = [split], [single_consumer(o) if not o.is_graph_output() else None for o in split.outputs]
        elif len(readers) == 3 and all(is_std(r, "Slice") and r.inputs[0] is out for r in readers):
            cuts = readers
            for r in readers:
                starts, ends, axes = _int_list(r, 1), _int_list(r, 2), _int_list(r, 3)
                steps = _int_list(r, 4) if len(r.inputs) > 4 and r.inputs[4] is not None else [1]
                if axes != [0] or steps != [1] or starts is None or len(starts) != 1 or ends != [starts[0] + 1]:
                    return None
                if not 0 <= starts[0] < 3 or parts[starts[0]] is not None or r.outputs[0].is_graph_output():
                    return None
                parts[starts[0]] = single_consumer(r.outputs[0])
        else:
            return None
        if any(p is None or not is_std(p, "Squeeze") or _int_list(p, 1) != [0] for p in parts):
            return None
        if any(p.outputs[0].is_graph_output() for p in parts):  # a graph output keeps its producer
            return None
        return parts, cuts

    @classmethod
    def _rewrite(cls, graph: ir.Graph, t: ir.Node) -> bool:
        perm = attr_value(t, "perm", None)
        if perm is None or list(perm) != [2, 0, 3, 1, 4] or t.inputs[0] is None:
            return False
        r = t.inputs[0].producer()
        if not is_std(r, "Reshape") or single_consumer(r.outputs[0]) is not t:
            return False
        x = r.inputs[0]
        xd, rd = _static_dims(x), _static_dims(r.outputs[0])
        if xd is None or rd is None or len(xd) != 3 or len(rd) != 5 or None in rd[2:] or rd[2] != 3:
            return False
        heads, d = rd[3], rd[4]
        if xd[2] != 3 * heads * d:
            return False
        found = cls._unbind(t)
        if found is None:
            return False
        squeezes, cuts = found
        name, width = t.name or "qkv", heads * d
        axes = new_initializer(graph, f"{name}.slice_axes", np.array([2], np.int64))
        target = new_initializer(graph, f"{name}.head_shape", np.array([0, 0, heads, d], np.int64))
        for i, sq in enumerate(squeezes):
            starts = new_initializer(graph, f"{name}.start{i}", np.array([i * width], np.int64))
            ends = new_initializer(graph, f"{name}.end{i}", np.array([(i + 1) * width], np.int64))
            part = ir.Value(name=f"{name}.part{i}", shape=ir.Shape([*x.shape[:2], width]), type=x.type)
            split_heads = ir.Value(name=f"{name}.heads{i}", shape=ir.Shape([*x.shape[:2], heads, d]), type=x.type)
            old = sq.outputs[0]
            out = ir.Value(name=f"{name}.split{i}", shape=old.shape, type=old.type)
            nodes = [
                ir.Node("", "Slice", [x, starts, ends, axes], outputs=[part], name=f"{name}.slice{i}"),
                ir.Node("", "Reshape", [part, target], outputs=[split_heads], name=f"{name}.reshape{i}"),
                ir.Node(
                    "",
                    "Transpose",
                    [split_heads],
                    [ir.AttrInt64s("perm", [0, 2, 1, 3])],
                    outputs=[out],
                    name=f"{name}.transpose{i}",
                ),
            ]
            graph.insert_before(sq, nodes)
            ir.convenience.replace_all_uses_with(old, out)
        for node in [*squeezes, *cuts, t, r]:
            graph.remove(node, safe=True)
        return True


def _thirds(attn: ir.Node) -> ir.Value | None:
    """X where FP8Attention's Q, K and V are Slices of the first, second and third third of X's last axis, each read
    only by the attention; else None."""
    slices = [attn.inputs[i].producer() if attn.inputs[i] is not None else None for i in range(3)]
    if any(not is_std(s, "Slice") or single_consumer(s.outputs[0]) is not attn for s in slices):
        return None
    x = slices[0].inputs[0]
    xd = _static_dims(x)
    if xd is None or not xd or xd[-1] is None or xd[-1] % 3:
        return None
    n = xd[-1] // 3
    for i, s in enumerate(slices):
        if s.inputs[0] is not x or len(s.inputs) < 4:
            return None
        axes, steps = _int_list(s, 3), _int_list(s, 4) if len(s.inputs) > 4 and s.inputs[4] is not None else [1]
        if axes not in ([len(xd) - 1], [-1]) or steps != [1]:
            return None
        if _int_list(s, 1) != [i * n] or _int_list(s, 2) != [(i + 1) * n]:
            return None
    return x


class PackQkvPass(ir.passes.InPlacePass):
    """Three FP8MatMul projections of one input feeding one FP8Attention -> one FP8MatMul and the packed form; Q, K
    and V sliced from one projection's thirds -> the packed form on that projection."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for attn in list(graph):
            if attn.domain != FP8ORT_DOMAIN or attn.op_type != "FP8Attention" or len(attn.inputs) < 3:
                continue
            if self._pack(graph, attn):
                modified = True
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _pack(graph: ir.Graph, attn: ir.Node) -> bool:
        x = _thirds(attn)
        if x is not None:
            _read_packed(graph, attn, x, [attn.inputs[i].producer() for i in range(3)])
            return True
        projs = [_projection(attn.inputs[i], attn) for i in range(3)]
        if any(p is None for p in projs) or len({id(p) for p in projs}) != 3:
            return False
        q = projs[0]
        trans_b = attr_value(q, "transB", 0)
        if any(p.inputs[0] is not q.inputs[0] or not _same_scale(p.inputs[2], q.inputs[2]) for p in projs):
            return False
        if any(attr_value(p, "transB", 0) != trans_b for p in projs):
            return False
        weights = [const_array(p.inputs[1]) for p in projs]
        if any(w is None or w.ndim != 2 or w.dtype != weights[0].dtype or w.shape != weights[0].shape for w in weights):
            return False
        n = weights[0].shape[0 if trans_b else 1]
        scales = [const_array(p.inputs[3]) for p in projs]
        if any(s is None or s.dtype != np.float32 or s.size not in (1, n) for s in scales):
            return False
        has_bias = [len(p.inputs) > 4 and p.inputs[4] is not None for p in projs]
        if any(has_bias) and not all(has_bias):  # a zero bias would turn -0 outputs into +0
            return False
        biases = [const_array(p.inputs[4]) for p in projs] if has_bias[0] else []
        if any(b is None or b.dtype != np.float32 or b.shape != (n,) for b in biases):
            return False

        name = q.name or "qkv"
        w = new_initializer(graph, f"{name}.qkv_weight", np.concatenate(weights, axis=0 if trans_b else 1))
        ws = new_initializer(
            graph, f"{name}.qkv_w_scale", np.concatenate([np.broadcast_to(s.reshape(-1), (n,)) for s in scales])
        )
        inputs = [q.inputs[0], w, q.inputs[2], ws]
        if biases:
            inputs.append(new_initializer(graph, f"{name}.qkv_bias", np.concatenate(biases)))
        old = q.outputs[0]
        shape = None
        if old.shape is not None and len(old.shape) >= 1:
            last = old.shape[-1]
            shape = ir.Shape([*old.shape[:-1], 3 * last if isinstance(last, int) else None])
        y = ir.Value(name=f"{name}.qkv", type=ir.TensorType(ir.DataType.FLOAT), shape=shape)
        node = ir.Node(
            FP8ORT_DOMAIN,
            "FP8MatMul",
            inputs,
            [
                ir.AttrString("activation", ""),
                ir.AttrInt64("output_dtype", int(ir.DataType.FLOAT)),
                ir.AttrInt64("transB", int(trans_b)),
            ],
            outputs=[y],
            name=f"{name}.qkv",
        )
        node.meta[QKV_SOURCES_KEY] = [p.outputs[0].name for p in projs]  # their ranges are the packed output's
        graph.insert_before(attn, node)
        _read_packed(graph, attn, y, projs)
        return True


def _read_packed(graph: ir.Graph, attn: ir.Node, packed: ir.Value, producers: list[ir.Node]) -> None:
    """FP8Attention reads ``packed`` as its packed Q (K and V absent); ``producers``, which wrote Q, K and V, go."""
    attn.replace_input_with(0, packed)
    attn.replace_input_with(1, None)
    attn.replace_input_with(2, None)
    for p in producers:
        graph.remove(p, safe=True)


class Float16QkvPass(ir.passes.InPlacePass):
    """Q, K and V in float16: each FP8Attention whose Q, K and V (or packed Q) are written by FP8MatMuls as float32
    with no activation, read by FP8Attentions only (as Q, K or V), gets them in float16 (``output_dtype`` FLOAT16 on
    those FP8MatMuls), unless the calibration data saw a projection output larger than ``FLOAT16_QKV_LIMIT``.

    ``observed_max``: the largest finite ``|x|`` of each calibrated tensor (the projections' outputs carry their
    float model names; a packed projection lists its three in ``node.meta[QKV_SOURCES_KEY]``). Every FP8Attention's
    report line (``node.meta[ATTENTION_INFO_KEY]``) gets which type its Q, K and V have, and why where float32.
    """

    def __init__(self, observed_max: Mapping[str, float]) -> None:
        super().__init__()
        self.observed_max = observed_max

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        attns = [n for n in model.graph if n.domain == FP8ORT_DOMAIN and n.op_type == "FP8Attention"]
        inputs = {id(a): list({id(v): v for v in a.inputs[:3] if v is not None}.values()) for a in attns}
        reasons: dict[int, str] = {}
        maxima: dict[int, float] = {}
        for a in attns:
            try:
                maxima[id(a)] = max([self._check(v) for v in inputs[id(a)]], default=0.0)
            except _KeepFloat32 as why:
                reasons[id(a)] = str(why)
        # A projection read by several attentions (K and V shared across blocks) changes type for all of them or for
        # none: an attention keeping float32 keeps its projections float32 for the others too.
        changed = True
        while changed:
            changed = False
            for a in attns:
                if id(a) in reasons:
                    continue
                for v in inputs[id(a)]:
                    other = next((u.node for u in v.uses() if id(u.node) in reasons), None)
                    if other is not None:
                        reasons[id(a)] = f"{v.name} is also read by {other.name}, which keeps float32 Q, K and V"
                        changed = True
                        break
        for a in attns:
            if id(a) in reasons:
                line = f"; float32 Q, K and V: {reasons[id(a)]}"
            else:
                for v in inputs[id(a)]:
                    p = v.producer()
                    p.attributes["output_dtype"] = ir.AttrInt64("output_dtype", int(ir.DataType.FLOAT16))
                    v.type = ir.TensorType(ir.DataType.FLOAT16)
                line = f"; float16 Q, K and V (projection max |x| {maxima[id(a)]:.4g} on the calibration data)"
            a.meta[ATTENTION_INFO_KEY] = a.meta.get(ATTENTION_INFO_KEY, "FP8Attention") + line
        return ir.passes.PassResult(model, bool(attns))  # the report lines at least

    def _check(self, v: ir.Value) -> float:
        """The calibrated maximum of ``v``, a float32 projection that may turn float16; raises ``_KeepFloat32``
        with the reason where it may not."""
        p = v.producer()
        if p is None or p.domain != FP8ORT_DOMAIN or p.op_type != "FP8MatMul":
            what = "a graph input or initializer" if p is None else f"{p.op_type} {p.name}"
            raise _KeepFloat32(f"{v.name} comes from {what}, not from an FP8MatMul")
        out_type = attr_value(p, "output_dtype", int(ir.DataType.FLOAT))  # the type it writes, annotated or not
        if out_type != ir.DataType.FLOAT or v.dtype not in (None, ir.DataType.FLOAT):
            raise _KeepFloat32(f"the projection {p.name} writes {ir.DataType(out_type).name.lower()}, not float32")
        if attr_value(p, "activation", "") not in ("", b""):
            raise _KeepFloat32(f"the projection {p.name} has a fused activation")
        if v.is_graph_output():
            raise _KeepFloat32(f"{v.name} is a graph output")
        for u in v.uses():
            n = u.node
            if not (n.domain == FP8ORT_DOMAIN and n.op_type == "FP8Attention" and u.idx < 3):
                raise _KeepFloat32(f"{v.name} is also read by {n.op_type} {n.name}")
        top = 0.0
        for name in p.meta.get(QKV_SOURCES_KEY, [v.name]):
            m = self.observed_max.get(name)
            if m is None:
                raise _KeepFloat32(f"no calibrated range for {name}")
            if not m <= FLOAT16_QKV_LIMIT:
                raise _KeepFloat32(
                    f"{name} reached max |x| {m:.4g} on the calibration data, above {FLOAT16_QKV_LIMIT:g} "
                    "(float16 ends at 65504)"
                )
            top = max(top, m)
        return top


class _KeepFloat32(Exception):
    """Why an attention's Q, K and V stay float32 (the report line's reason)."""
