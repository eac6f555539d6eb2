"""Keep channels-last tensors channels-last past the ops that do not care about the layout (``layout="NHWC"``).

The NHWC emitter puts a Transpose back to NCHW wherever an NHWC FP8Conv meets a node it does not rewrite. In
squeeze-excitation blocks (MobileNetV3, EfficientNet) those nodes are a GlobalAveragePool and the Mul that scales the
feature map, so every block crossed layouts four times, on float tensors. This pass moves the layout Transpose
below such nodes:

* ``GlobalAveragePool(to_nchw(v))`` becomes ``to_nchw(ReduceMean(v, axes=[1, 2], keepdims=1))``;
* ``ReduceMean(to_nchw(v), axes)`` (what exporters write for ``x.mean((2, 3), keepdim=True)``, e.g. timm's
  squeeze-excitation) becomes the same mean over the matching NHWC axes: behind a ``to_nchw`` with keepdims, and with
  no transpose at all where keepdims=0 leaves the kept axes in the same order in both layouts (a mean over H and W);
* a broadcasting elementwise op whose inputs are each ``to_nchw`` of a 4-D value, or a one-element constant,
  becomes ``to_nchw`` of the same op on the NHWC values.

Repeated until nothing moves; ``FoldLayoutTransposesPass`` then cancels each ``to_nhwc(to_nchw(v))`` pair, so FP8Conv
reads the NHWC tensor directly. The results are the same numbers: only where the data sits in memory changes.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from .prepare import attr_value, is_std, new_initializer

TO_NCHW = [0, 3, 1, 2]
NHWC_POSITION = (0, 3, 1, 2)  # where NCHW axis i sits in the NHWC tensor
LAYOUT_FREE_BINARY = ("Add", "Sub", "Mul", "Div")
LAYOUT_FREE_UNARY = ("Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Clip", "Tanh")
REDUCE_AXES_AS_INPUT = 18  # ReduceMean takes axes as an input from opset 18


def _to_nchw_source(v: ir.Value | None) -> ir.Value | None:
    """The NHWC value ``v`` is the layout transpose of, or None."""
    node = v.producer() if v is not None else None
    if not is_std(node, "Transpose") or not (node.name or "").endswith(".to_nchw"):
        return None
    perm = node.attributes.get("perm")
    return node.inputs[0] if perm is not None and list(perm.as_ints()) == TO_NCHW else None


def _is_scalar_constant(v: ir.Value | None) -> bool:
    return v is not None and v.const_value is not None and int(np.prod(v.const_value.shape)) == 1


def _nhwc_shape(shape: ir.Shape | None) -> ir.Shape | None:
    return None if shape is None or len(shape) != 4 else ir.Shape([shape[0], shape[2], shape[3], shape[1]])


def _broadcast(a: ir.Shape, b: ir.Shape) -> ir.Shape | None:
    """Two 4-D shapes broadcast together (None when a pair of dimensions cannot be told apart statically)."""
    dims = []
    for x, y in zip(a, b):
        if x == 1:
            dims.append(y)
        elif y == 1 or x == y:
            dims.append(x)
        else:
            return None
    return ir.Shape(dims)


class SinkLayoutTransposesPass(ir.passes.InPlacePass):
    """Move ``.to_nchw`` layout transposes below GlobalAveragePool and layout-free elementwise ops."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        self.opset = model.opset_imports.get("", 21)
        modified = False
        changed = True
        while changed:
            changed = False
            for node in list(model.graph):
                if node.graph is None:  # removed earlier in this sweep
                    continue
                if self._sink(model.graph, node):
                    changed = modified = True
        return ir.passes.PassResult(model, modified)

    def _sink(self, graph: ir.Graph, node: ir.Node) -> bool:
        if not node.outputs or node.outputs[0].is_graph_output():  # a graph output keeps its producer and layout
            return False
        if is_std(node, "GlobalAveragePool"):
            src = _to_nchw_source(node.inputs[0])
            if src is None or src.shape is None or len(src.shape) != 4:
                return False
            inputs = [src]
            attrs = [ir.AttrInt64("keepdims", 1)]
            if self.opset >= REDUCE_AXES_AS_INPUT:
                inputs.append(new_initializer(graph, f"{node.name or 'gap'}.axes", np.array([1, 2], np.int64)))
            else:
                attrs.append(ir.AttrInt64s("axes", [1, 2]))
            out_shape = ir.Shape([src.shape[0], 1, 1, src.shape[3]])
            return self._replace(graph, node, "ReduceMean", inputs, attrs, out_shape)
        if is_std(node, "ReduceMean"):
            return self._sink_reduce_mean(graph, node)
        if node.domain not in ("", "ai.onnx"):
            return False
        if node.op_type in LAYOUT_FREE_UNARY:
            src = _to_nchw_source(node.inputs[0])
            if src is None or any(not (v is None or _is_scalar_constant(v)) for v in node.inputs[1:]):
                return False
            return self._replace(
                graph, node, node.op_type, [src, *node.inputs[1:]], list(node.attributes.values()), src.shape
            )
        if node.op_type in LAYOUT_FREE_BINARY and len(node.inputs) == 2:
            sources = [_to_nchw_source(v) for v in node.inputs]
            if all(s is None for s in sources):
                return False
            inputs = []
            for v, s in zip(node.inputs, sources):
                if s is not None and s.shape is not None and len(s.shape) == 4:
                    inputs.append(s)
                elif _is_scalar_constant(v):
                    inputs.append(v)
                else:
                    return False
            shapes = [s.shape for s in sources if s is not None]
            shape = shapes[0] if len(shapes) == 1 else _broadcast(shapes[0], shapes[1])
            return self._replace(graph, node, node.op_type, inputs, [], shape)
        return False

    def _sink_reduce_mean(self, graph: ir.Graph, node: ir.Node) -> bool:
        src = _to_nchw_source(node.inputs[0])
        if src is None or src.shape is None or len(src.shape) != 4:
            return False
        if len(node.inputs) > 1 and node.inputs[1] is not None:
            if node.inputs[1].const_value is None:  # axes computed at run time
                return False
            axes = [int(a) for a in node.inputs[1].const_value.numpy().ravel()]
        elif "axes" in node.attributes:
            axes = list(node.attributes["axes"].as_ints())
        else:
            axes = []
        noop_empty = node.attributes.get("noop_with_empty_axes")
        if not axes and noop_empty is not None and noop_empty.as_int():
            return False  # an identity; nothing to gain
        keep_attr = node.attributes.get("keepdims")
        keepdims = keep_attr is None or keep_attr.as_int() != 0
        nchw_axes = sorted({a % 4 for a in axes}) if axes else [0, 1, 2, 3]
        nhwc_axes = sorted(NHWC_POSITION[a] for a in nchw_axes)
        kept = [NHWC_POSITION[a] for a in range(4) if a not in nchw_axes]
        if not keepdims and kept != sorted(kept):
            return False  # the remaining axes would come out in another order
        inputs = [src]
        attrs = [ir.AttrInt64("keepdims", int(keepdims))]
        if self.opset >= REDUCE_AXES_AS_INPUT:
            inputs.append(new_initializer(graph, f"{node.name or 'mean'}.nhwc_axes", np.array(nhwc_axes, np.int64)))
        else:
            attrs.append(ir.AttrInt64s("axes", nhwc_axes))
        dims = list(src.shape)
        if keepdims:
            shape = ir.Shape([1 if i in nhwc_axes else d for i, d in enumerate(dims)])
            return self._replace(graph, node, "ReduceMean", inputs, attrs, shape)
        out = node.outputs[0]
        y = ir.Value(name=f"{out.name}.nhwc", type=out.type, shape=out.shape)
        new = ir.Node("", "ReduceMean", inputs, attrs, outputs=[y], name=f"{node.name or out.name}.nhwc")
        new.meta.update(node.meta)  # a report reason travels with the node
        graph.insert_after(node, [new])
        ir.convenience.replace_all_uses_with(out, y)
        graph.remove(node, safe=True)
        return True

    @staticmethod
    def _replace(
        graph: ir.Graph, old: ir.Node, op: str, inputs: list, attrs: list, nhwc_shape: ir.Shape | None
    ) -> bool:
        """``old`` -> ``op`` on NHWC inputs, then a ``.to_nchw`` Transpose giving old's output to its consumers."""
        out = old.outputs[0]
        base = old.name or out.name or op
        y = ir.Value(name=f"{out.name}.nhwc", type=out.type, shape=nhwc_shape)
        new = ir.Node("", op, inputs, attrs, outputs=[y], name=f"{base}.nhwc")
        new.meta.update(old.meta)  # a report reason travels with the node
        back = ir.Value(name=f"{out.name}.back", type=out.type, shape=out.shape)
        t = ir.Node("", "Transpose", [y], [ir.AttrInt64s("perm", TO_NCHW)], outputs=[back], name=f"{base}.to_nchw")
        graph.insert_after(old, [new, t])
        ir.convenience.replace_all_uses_with(out, back)
        graph.remove(old, safe=True)
        return True


FP8ORT_DOMAIN = "com.fp8ort"
TO_NHWC = [0, 2, 3, 1]
POOL_REASON_KEY = "fp8ort.pool_reason"  # node.meta key: why a MaxPool stayed float (read by the report)


def _fp8ort_node(node: ir.Node | None, op: str) -> bool:
    return node is not None and node.domain == FP8ORT_DOMAIN and node.op_type == op


class Fp8MaxPoolPass(ir.passes.InPlacePass):
    """Run a MaxPool between NHWC FP8Convs on FP8 NHWC data (``com.fp8ort.FP8MaxPool``).

    The NHWC emitter leaves ``FP8Conv (float NHWC) -> to_nchw -> MaxPool -> to_nhwc -> FP8Conv(s)``. Since ``q`` is
    monotone, ``MaxPool(q(x, s)) == q(MaxPool(x), s)`` exactly: the producer outputs FP8 with the consumers' x_scale
    (they all read the pooled tensor's calibrated scale), the pool runs on the FP8 bytes, and the consumers read
    them as X. The numbers do not change; the two transposes and the float traffic go. A MaxPool that does not fit
    keeps its float form, its reason in ``node.meta[POOL_REASON_KEY]``.
    """

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for node in list(model.graph):
            if node.graph is None or not is_std(node, "MaxPool"):
                continue
            why = self._why_not(node)
            if why:
                node.meta[POOL_REASON_KEY] = why
                continue
            self._rewrite(model.graph, node)
            modified = True
        return ir.passes.PassResult(model, modified)

    def _why_not(self, pool: ir.Node) -> str:
        if len(pool.outputs) > 1 and (pool.outputs[1].uses() or pool.outputs[1].is_graph_output()):
            return "MaxPool with an Indices output has no FP8 kernel"
        kernel = attr_value(pool, "kernel_shape", [])
        if len(kernel) != 2:
            return f"{len(kernel)}-D MaxPool: FP8MaxPool is 2-D only"
        if attr_value(pool, "auto_pad", "NOTSET") != "NOTSET":
            return "MaxPool with auto_pad: FP8MaxPool takes explicit pads only"
        src = _to_nchw_source(pool.inputs[0])
        producer = src.producer() if src is not None else None
        if not (_fp8ort_node(producer, "FP8Conv") and attr_value(producer, "layout", "NCHW") == "NHWC"):
            return "its input does not come from an NHWC FP8Conv"
        if len(src.uses()) != 1 or len(pool.inputs[0].uses()) != 1 or pool.inputs[0].is_graph_output():
            return "the FP8Conv output it reads has other readers"
        out = pool.outputs[0]
        if out.is_graph_output() or not out.uses():
            return "its output is a graph output"
        scales, formats = set(), set()
        for use in out.uses():
            t = use.node
            if _to_nchw_source(t.outputs[0]) is not None or not is_std(t, "Transpose"):
                return "a reader of its output is not an FP8 op"
            perm = t.attributes.get("perm")
            if perm is None or list(perm.as_ints()) != TO_NHWC or t.outputs[0].is_graph_output():
                return "a reader of its output is not an FP8 op"
            for u in t.outputs[0].uses():
                conv = u.node
                if not (_fp8ort_node(conv, "FP8Conv") and u.idx == 0 and attr_value(conv, "layout", "NCHW") == "NHWC"):
                    return "a reader of its output is not an NHWC FP8Conv reading it as X"
                scale = conv.inputs[2]
                if scale is None or scale.const_value is None:
                    return "a reader's x_scale is not a constant"
                scales.add(float(scale.const_value.numpy().reshape(())))
                formats.add(conv.inputs[1].dtype)
        if len(scales) != 1 or len(formats) != 1:
            return "its readers quantize it with different scales or FP8 formats"
        return ""

    @staticmethod
    def _rewrite(graph: ir.Graph, pool: ir.Node) -> None:
        src = _to_nchw_source(pool.inputs[0])
        conv = src.producer()
        to_nhwc = [u.node for u in pool.outputs[0].uses()]
        first = next(iter(to_nhwc[0].outputs[0].uses())).node
        scale, fp8 = first.inputs[2], first.inputs[1].dtype
        # The producer: FP8 output quantized with the readers' x_scale (input 7, y_scale).
        conv.attributes["output_dtype"] = ir.AttrInt64("output_dtype", int(fp8))
        if len(conv.inputs) < 8:
            conv.resize_inputs(8)
        conv.replace_input_with(7, scale)
        src.type = ir.TensorType(fp8)
        out = pool.outputs[0]
        y = ir.Value(name=f"{out.name}.nhwc", type=ir.TensorType(fp8), shape=to_nhwc[0].outputs[0].shape)
        attrs = [
            ir.AttrInt64s("kernel_shape", list(attr_value(pool, "kernel_shape", []))),
            ir.AttrInt64s("strides", list(attr_value(pool, "strides", [1, 1]))),
            ir.AttrInt64s("pads", list(attr_value(pool, "pads", [0, 0, 0, 0]))),
            ir.AttrInt64s("dilations", list(attr_value(pool, "dilations", [1, 1]))),
            ir.AttrInt64("ceil_mode", int(attr_value(pool, "ceil_mode", 0))),
            ir.AttrString("layout", "NHWC"),
        ]
        name = pool.name
        pool.name = f"{name}.replaced"
        new = ir.Node(FP8ORT_DOMAIN, "FP8MaxPool", [src], attrs, outputs=[y], name=name)
        graph.insert_after(pool, new)
        for t in to_nhwc:
            ir.convenience.replace_all_uses_with(t.outputs[0], y)
            graph.remove(t, safe=True)
        to_nchw = pool.inputs[0].producer()
        graph.remove(pool, safe=True)
        graph.remove(to_nchw, safe=True)
