"""Spatial means and squeeze-excitation gates on FP8 data (``com.fp8ort.FP8GlobalAveragePool``, ``FP8ChannelMul``).

In MobileNetV3/EfficientNet blocks a depthwise conv's output X is read by a mean over H and W (the squeeze) and by
``Mul(X, G)`` with the block's gate G (the excitation), whose product the projection conv quantizes; a network head
pools the last conv's output. ``rules.pooled_fp8_outputs`` decides on the float graph which X go FP8, so the QDQ
emulation quantizes X before the same nodes. Here the emitted producer already writes X in FP8 (its y_scale is X's
calibrated scale): the mean becomes ``FP8GlobalAveragePool(X, x_scale)`` (float output), the Mul
``FP8ChannelMul(X, x_scale, G, y_scale)`` whose FP8 output the projection convs read as their quantized X. Pooling
and gate nodes that read a quantized conv's output and stay float keep their reason in ``node.meta``.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx_ir as ir

from .prepare import is_std
from .rules import Pooling

FP8ORT_DOMAIN = "com.fp8ort"
POOLING_REASON_KEY = "fp8ort.pooling_reason"  # node.meta key: why a pooling or gate node stays float (report)
TO_NCHW = [0, 3, 1, 2]


def rewrite_pooling(
    graph: ir.Graph,
    pooling: Pooling,
    scale_of: Callable[[str], ir.Value],
    nhwc_of: Callable[[ir.Value], ir.Value],
    nhwc: bool,
) -> None:
    """Rewrite the pools and gates of every FP8 output of ``pooling`` (``scale_of``: the activation scale of a
    calibrated name; ``nhwc_of``: a float value in NHWC; ``nhwc``: the producers write NHWC)."""
    for node, why in pooling.float_reason.items():
        node.meta[POOLING_REASON_KEY] = why
    for name, p in pooling.outputs.items():
        for pool in p.pools:
            _rewrite_pool(graph, pool, scale_of(name), nhwc)
        for gate in p.gates:
            _rewrite_gate(graph, gate.node, scale_of(name), scale_of, nhwc_of, nhwc)


def _fp8_input(node: ir.Node) -> int:
    """The input index of the FP8 tensor the emitter handed ``node``."""
    for i, v in enumerate(node.inputs):
        if v is not None and v.dtype is not None and v.dtype.name.startswith("FLOAT8"):
            return i
    raise AssertionError(f"{node.name}: the producer of its pooled input does not write FP8")  # an emitter bug


def _take_place(graph: ir.Graph, old: ir.Node, new: list[ir.Node], final: ir.Value) -> None:
    """``new`` in place of ``old``; ``final`` takes old's output (name and readers)."""
    out = old.outputs[0]
    name = old.name
    old.name = f"{name}.replaced"
    new[0].name = name
    graph.insert_before(old, new)
    ir.convenience.replace_all_uses_with(out, final, replace_graph_outputs=True)
    graph.remove(old, safe=True)
    final.name = out.name


def _rewrite_pool(graph: ir.Graph, pool: ir.Node, x_scale: ir.Value, nhwc: bool) -> None:
    x = pool.inputs[_fp8_input(pool)]
    out = pool.outputs[0]
    shape = None if x.shape is None else ir.Shape([x.shape[0], 1, 1, x.shape[3]] if nhwc else [*x.shape[:2], 1, 1])
    y = ir.Value(name=f"{out.name}.fp8ort", type=out.type, shape=shape)
    new = [
        ir.Node(
            FP8ORT_DOMAIN,
            "FP8GlobalAveragePool",
            [x, x_scale],
            [ir.AttrString("layout", "NHWC" if nhwc else "NCHW")],
            outputs=[y],
        )
    ]
    final = y
    if nhwc:  # the readers take NCHW; FoldLayoutTransposesPass cancels this against their own to_nhwc
        final = ir.Value(name=f"{out.name}.nchw", type=out.type, shape=out.shape)
        t = ir.Node("", "Transpose", [y], [ir.AttrInt64s("perm", TO_NCHW)], outputs=[final])
        t.name = f"{pool.name}.to_nchw"
        new.append(t)
        y.name = f"{out.name}.nhwc"
    _take_place(graph, pool, new, final)


def _rewrite_gate(
    graph: ir.Graph,
    mul: ir.Node,
    x_scale: ir.Value,
    scale_of: Callable[[str], ir.Value],
    nhwc_of: Callable[[ir.Value], ir.Value],
    nhwc: bool,
) -> None:
    i = _fp8_input(mul)
    x, gate = mul.inputs[i], mul.inputs[1 - i]
    out = mul.outputs[0]
    y_scale = scale_of(out.name)  # the scale every reader quantizes the product with
    y = ir.Value(name=f"{out.name}.fp8ort", type=ir.TensorType(x.dtype), shape=x.shape)
    attrs = [ir.AttrString("layout", "NHWC" if nhwc else "NCHW"), ir.AttrInt64("output_dtype", int(x.dtype))]
    g = nhwc_of(gate) if nhwc else gate
    node = ir.Node(FP8ORT_DOMAIN, "FP8ChannelMul", [x, x_scale, g, y_scale], attrs, outputs=[y])
    for use in list(out.uses()):  # the readers' own NHWC transposes go: they read the FP8 product directly
        t = use.node
        if is_std(t, "Transpose") and (t.name or "").endswith(".to_nhwc"):
            ir.convenience.replace_all_uses_with(t.outputs[0], out)
            graph.remove(t, safe=True)
    _take_place(graph, mul, [node], y)
