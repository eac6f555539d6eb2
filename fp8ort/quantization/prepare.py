"""Graph preparation before matching: onnx-ir passes that make every export of a model look the same.

Exporters write the same network in different ways: TorchScript (``dynamo=False``) hides deduplicated initializers
behind ``Identity`` nodes and writes scalars as ``Constant`` nodes, dynamo writes initializers and other opsets.
The rules (``rules.py``) only see constants held by initializers, so before matching the model goes through:

0. onnx-ir's ``InlinePass`` (model-local functions) and ``RemoveInitializersFromInputsPass`` (IR < 4 exports list
   every weight as a graph input too; here they are constants);
1. ``convert_opset``: the default-domain opset becomes ``TARGET_OPSET`` (onnx's version converter); models that
   cannot be converted are a ``QuantizeError``;
2. ``RemoveIdentityPass`` (main graph) and onnx-ir's ``LiftConstantsToInitializersPass`` (every ``Constant`` node);
3. ``FoldConstantsPass``: small constant subgraphs (shape arithmetic, scalars) evaluated once with
   ``onnx.reference``, and ``Shape``/``Size`` of statically shaped values; weights are not touched;
4. ``FoldBatchNormPass``: inference BatchNormalization into the Conv before it;
5. onnx-ir's ``DeduplicateHashedInitializersPass``, ``RemoveUnusedNodesPass``, ``RemoveUnusedOpsetsPass``;
6. ``UniqueNodeNamesPass`` (every node gets a unique name: the report and the rewritten nodes use them);
7. onnx-ir's ``ShapeInferencePass`` with data propagation (symbolic dimensions stay symbolic).
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import onnx
import onnx.version_converter
import onnx_ir as ir
import onnx_ir.passes.common as common

from .errors import QuantizeError

MIN_OPSET = 13  # Clip/Split/Squeeze with tensor inputs, the oldest opset fp8ort's rules are written for
TARGET_OPSET = 21  # FP8 QuantizeLinear/DequantizeLinear with output_dtype; the opset every prepared model has
MIN_IR_VERSION = 3  # opset imports exist from IR version 3 on
FOLD_INPUT_LIMIT = 8192  # elements: constant folding stays with shape arithmetic and small tensors
FOLD_OUTPUT_LIMIT = 65536

STD_DOMAINS = ("", "ai.onnx")


def default_opset(model: ir.Model) -> int:
    """The model's default-domain (``ai.onnx``) opset version, 0 when it imports none."""
    return int(model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0)))


def check_model(model: ir.Model) -> None:
    """Refuse models the passes cannot handle, with the problem and the fix."""
    ir_version = model.ir_version or 0
    if ir_version < MIN_IR_VERSION:
        raise QuantizeError(
            f"the model has IR version {ir_version}; fp8ort needs IR version >= {MIN_IR_VERSION} (ONNX 1.1 or newer): "
            "re-export the model with a current exporter"
        )
    if ir_version > onnx.IR_VERSION:
        raise QuantizeError(
            f"the model has IR version {ir_version}, newer than the installed onnx {onnx.__version__} knows "
            f"({onnx.IR_VERSION}); upgrade onnx (pip install -U onnx) or export with an older exporter"
        )
    if default_opset(model) == 0:
        raise QuantizeError("the model imports no ai.onnx opset; it is not a standard ONNX model")
    if len(model.graph.outputs) == 0:
        raise QuantizeError("the model has no graph outputs; export it with its outputs")
    for v in model.graph.inputs:
        if v.shape is None or v.dtype is None:
            raise QuantizeError(f"model input {v.name!r} has no declared type/shape; re-export with input shapes")
    for v in model.graph.initializers.values():
        _check_tensor_bytes(v.name, v.const_value)
    for node in model.graph:
        attr = node.attributes.get("value") if is_std(node, "Constant") else None
        if attr is not None and attr.type == ir.AttributeType.TENSOR:
            _check_tensor_bytes(f"{node.name} (Constant)", attr.value)


def _check_tensor_bytes(name: str, tensor) -> None:
    """Refuse a tensor stored in the file whose raw bytes do not hold its declared shape: reading it would fail, or
    (sub-byte types, which numpy unpacks into the declared size) allocate whatever size a corrupt shape claims."""
    if not isinstance(tensor, ir.serde.TensorProtoTensor):
        return
    proto = tensor.raw
    if not proto.HasField("raw_data") or proto.data_location == onnx.TensorProto.EXTERNAL:
        return
    if tensor.dtype == ir.DataType.STRING:  # strings are never raw bytes
        return
    count = 1
    for d in proto.dims:
        count *= int(d)
    want = (count * tensor.dtype.bitwidth + 7) // 8 if count >= 0 else -1
    if want != len(proto.raw_data):
        raise QuantizeError(
            f"tensor {name!r} ({tensor.dtype.name}, shape {list(proto.dims)}) needs {want} bytes of data but the file "
            f"holds {len(proto.raw_data)}: the model file is corrupt or truncated; export it again"
        )


def convert_opset(model: ir.Model, target: int = TARGET_OPSET) -> ir.Model:
    """``model`` with its default-domain opset at ``target`` (up or down; onnx's version converter), or a
    ``QuantizeError``. ``model`` itself when it is there already."""
    version = default_opset(model)
    if version == target:
        return model
    problem, converted = "", None
    try:
        converted = _convert_version(model, target)
    except Exception as exc:  # the converter raises many types: report it as the user's fix
        problem = f" ({type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''})"
    if converted is None or default_opset(converted) != target:
        supported = f"fp8ort supports ai.onnx opsets {MIN_OPSET} to {target}"
        raise QuantizeError(
            f"the model uses ai.onnx opset {version}; {supported} and converting it to {target} failed"
            f"{problem}; re-export the model with opset_version between {MIN_OPSET} and {target} (e.g. "
            f"torch.onnx.export(..., opset_version={target}))"
        )
    for opsets in (converted.opset_imports, converted.graph.opset_imports):
        opsets.pop("ai.onnx", None)
        opsets[""] = target
    return converted


def _convert_version(model: ir.Model, target: int) -> ir.Model:
    """onnx's converter on the graph without its large or externally stored initializers (declared as inputs in
    their place: going between opsets it creates constants, it does not read weights), so the serialized graph stays
    small and external files are never read; the weights come back into the converted graph as they were."""
    weights = {
        name: v.const_value
        for name, v in model.graph.initializers.items()
        if v.const_value is not None
        and (v.const_value.size > FOLD_INPUT_LIMIT or isinstance(v.const_value, ir.ExternalTensor))
    }
    proto = ir.to_proto(model)
    kept = [t for t in proto.graph.initializer if t.name not in weights]
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(kept)
    for name, t in weights.items():
        proto.graph.input.append(onnx.helper.make_tensor_value_info(name, int(t.dtype), list(t.shape)))
    converted = ir.from_proto(onnx.version_converter.convert_version(proto, target))
    for v in list(converted.graph.inputs):
        if v.name in weights:
            converted.graph.inputs.remove(v)
            v.const_value = weights[v.name]
            converted.graph.register_initializer(v)
    return converted


class RemoveIdentityPass(ir.passes.InPlacePass):
    """Remove the main graph's Identity nodes (TorchScript puts deduplicated initializers behind them).

    Subgraphs keep theirs: an If/Loop body must not return an outer-scope value directly (onnxruntime refuses it).
    """

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for node in list(model.graph):
            if not is_std(node, "Identity") or len(node.inputs) != 1 or node.inputs[0] is None:
                continue
            x, y = node.inputs[0], node.outputs[0]
            if y.is_graph_output() and (x.is_graph_input() or x.is_initializer() or x.is_graph_output()):
                continue  # the graph needs this Identity to name its output
            if y.is_graph_output() and x.producer() is None:
                continue
            if x.shape is None:
                x.shape = y.shape
            if x.type is None:
                x.type = y.type
            was_output, name = y.is_graph_output(), y.name
            ir.convenience.replace_all_uses_with(y, x, replace_graph_outputs=True)
            model.graph.remove(node, safe=True)
            if was_output:
                x.name = name
            modified = True
        return ir.passes.PassResult(model, modified)


# ops never folded: random or stateful ones, and those whose value is not a function of their inputs
_NO_FOLD = frozenset(
    "Bernoulli Multinomial RandomNormal RandomNormalLike RandomUniform RandomUniformLike If Loop Scan "
    "SequenceConstruct SequenceInsert SequenceAt SequenceEmpty SplitToSequence ConcatFromSequence".split()
)


class FoldConstantsPass(ir.passes.InPlacePass):
    """Evaluate small constant subgraphs once: a standard-domain node whose inputs are all constants of at most
    ``FOLD_INPUT_LIMIT`` elements (outputs up to ``FOLD_OUTPUT_LIMIT``) runs through ``onnx.reference`` and its
    outputs become initializers; ``Shape``/``Size`` of a value whose shape is static become constants, and so does a
    ``Slice`` or ``Gather`` of ``Shape(x)`` that picks only static dimensions of x (an attention scale computed from
    the head size, ``1 / sqrt(Shape(q)[-1])``, when the batch is dynamic). Graph order is topological, so one walk
    folds chains. Weights (large initializers) are never read."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        opset = default_opset(model)
        modified = False
        for node in list(model.graph):
            if node.domain not in STD_DOMAINS or node.op_type in _NO_FOLD or not node.outputs:
                continue
            if any(o.is_graph_output() for o in node.outputs):
                continue
            values = self._static_shape_value(node) if node.op_type in ("Shape", "Size") else None
            if values is None and node.op_type in ("Slice", "Gather"):
                values = self._static_dims_picked(node)
            if values is None:
                values = self._evaluate(node, opset)
            if values is None:
                continue
            for out, array in zip(node.outputs, values):
                init = ir.Value(
                    name=out.name,
                    type=ir.TensorType(ir.DataType.from_numpy(array.dtype)),
                    shape=ir.Shape(array.shape),
                    const_value=ir.tensor(array, name=out.name),
                )
                out.name = f"{out.name}.folded"
                ir.convenience.replace_all_uses_with(out, init)
                model.graph.register_initializer(init)
            model.graph.remove(node, safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _static_shape_value(node: ir.Node) -> list[np.ndarray] | None:
        x = node.inputs[0] if node.inputs else None
        if x is None or x.shape is None or not all(isinstance(d, int) for d in x.shape):
            return None
        dims = [int(d) for d in x.shape]
        if node.op_type == "Size":
            return [np.array(int(np.prod(dims)), np.int64)]
        start = node.attributes.get_int("start", 0)
        end = node.attributes.get_int("end", len(dims))
        return [np.array(dims[slice(start, end)], np.int64)]

    @staticmethod
    def _static_dims_picked(node: ir.Node) -> list[np.ndarray] | None:
        """The value of ``Slice``/``Gather`` (axis 0) of ``Shape(x)`` with constant indices when every dimension of
        x it picks is static, else None."""
        shape_node = node.inputs[0].producer() if node.inputs and node.inputs[0] is not None else None
        if shape_node is None or not is_std(shape_node, "Shape") or not shape_node.inputs:
            return None
        x = shape_node.inputs[0]
        if x is None or x.shape is None:
            return None
        dims = list(x.shape)
        dims = dims[slice(shape_node.attributes.get_int("start", 0), shape_node.attributes.get_int("end", len(dims)))]
        positions = np.arange(len(dims))
        if node.op_type == "Gather":
            idx = const_array(node.inputs[1]) if len(node.inputs) > 1 else None
            if idx is None or idx.dtype.kind not in "iu" or node.attributes.get_int("axis", 0) not in (0, -1):
                return None
            if not np.all((idx >= -len(dims)) & (idx < len(dims))):
                return None
            picked = positions[idx]
        else:
            args = [const_array(v) if v is not None else None for v in node.inputs[1:5]]
            args += [None] * (4 - len(args))
            starts, ends, axes, steps = args
            given = [v for v in node.inputs[1:5] if v is not None]
            if any(const_array(v) is None for v in given) or starts is None or ends is None:
                return None
            if (
                starts.size != 1
                or ends.size != 1
                or (axes is not None and axes.reshape(-1).tolist() not in ([0], [-1]))
            ):
                return None
            step = 1 if steps is None else int(steps.reshape(-1)[0])
            if step == 0:
                return None
            picked = positions[int(starts.reshape(-1)[0]) : int(ends.reshape(-1)[0]) : step]
        values = [dims[int(i)] for i in picked.reshape(-1)]
        if not all(isinstance(d, int) for d in values):
            return None
        return [np.array(values, np.int64).reshape(picked.shape)]

    @staticmethod
    def _evaluate(node: ir.Node, opset: int) -> list[np.ndarray] | None:
        arrays = []
        for v in node.inputs:
            if v is None:
                arrays.append(None)
                continue
            a = const_array(v)
            if a is None or a.size > FOLD_INPUT_LIMIT or a.dtype == object:
                return None
            arrays.append(a)
        if not arrays or arrays[0] is None:
            return None
        if any(attr.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS) for attr in node.attributes.values()):
            return None
        from onnx.reference import ReferenceEvaluator

        names = [f"in{i}" if a is not None else "" for i, a in enumerate(arrays)]
        outs = [f"out{i}" for i in range(len(node.outputs))]
        try:
            proto = onnx.helper.make_node(node.op_type, names, outs, domain=node.domain)
            proto.attribute.extend(ir.serde.serialize_node(node).attribute)
            inits = [onnx.numpy_helper.from_array(a, n) for n, a in zip(names, arrays) if a is not None]
            graph = onnx.helper.make_graph(
                [proto], "fold", [], [onnx.helper.make_empty_tensor_value_info(o) for o in outs], inits
            )
            one = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
            # the output sizes first, from shape inference: a shape input asking for a huge tensor must not allocate it
            inferred = onnx.shape_inference.infer_shapes(one, strict_mode=True, data_prop=True)
            shapes = []
            for vi in inferred.graph.output:
                dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else None
                if dims is None or not all(d.HasField("dim_value") for d in dims):
                    return None
                shapes.append(tuple(d.dim_value for d in dims))
                if int(np.prod(shapes[-1], dtype=np.float64)) > FOLD_OUTPUT_LIMIT:
                    return None
            results = ReferenceEvaluator(one).run(None, {})
        except Exception:  # no inference or reference implementation for these inputs: leave it to the runtime
            return None
        results = [np.ascontiguousarray(np.asarray(r)) for r in results]
        if any(r.dtype == object or r.size > FOLD_OUTPUT_LIMIT for r in results):
            return None
        # the operator's output shape, not the reference implementation's (its integer Div of two scalars is 1-D)
        if any(r.size != int(np.prod(shape)) for r, shape in zip(results, shapes)):
            return None
        return [r.reshape(shape) for r, shape in zip(results, shapes)]


def const_array(v: ir.Value | None) -> np.ndarray | None:
    """The constant behind a value (an initializer that is not a graph input, or a Constant node), else None."""
    if v is None:
        return None
    if v.const_value is not None and not v.is_graph_input():
        return v.const_value.numpy()
    p = v.producer()
    if p is not None and p.op_type == "Constant" and p.domain in STD_DOMAINS:
        attr = p.attributes.get("value")
        if attr is not None:
            return attr.value.numpy()
    return None


def attr_value(node: ir.Node, name: str, default):
    """The value of ``node``'s attribute ``name``, or ``default`` where it has none."""
    a = node.attributes.get(name)
    return default if a is None else a.value


def single_consumer(v: ir.Value) -> ir.Node | None:
    """The one node that reads ``v`` (None for graph outputs and for values read by several nodes)."""
    if v.is_graph_output():
        return None
    users = {id(u.node): u.node for u in v.uses()}
    return next(iter(users.values())) if len(users) == 1 else None


def is_std(node: ir.Node | None, op: str) -> bool:
    """Whether ``node`` is the standard-domain op ``op``."""
    return node is not None and node.op_type == op and node.domain in STD_DOMAINS


def new_initializer(graph: ir.Graph, name: str, array: np.ndarray) -> ir.Value:
    """Register ``array`` as an initializer under a name not taken yet (``name``, ``name.1``, ...)."""
    taken = graph.initializers
    base, i = name, 0
    while name in taken:
        i += 1
        name = f"{base}.{i}"
    v = ir.Value(name=name, const_value=ir.Tensor(np.array(array, order="C", copy=True), name=name))
    v.shape = ir.Shape(array.shape)
    v.type = ir.TensorType(v.const_value.dtype)
    graph.register_initializer(v)
    return v


class FoldBatchNormPass(ir.passes.InPlacePass):
    """Fold inference-mode BatchNormalization into the Conv before it (its only consumer); ``folded`` maps the
    BatchNormalization's name to the Conv's."""

    def __init__(self) -> None:
        super().__init__()
        self.folded: dict[str, str] = {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        for bn in list(graph):
            conv = self._conv_before(bn)
            if conv is None:
                continue
            w = const_array(conv.inputs[1])
            b = const_array(conv.inputs[2]) if len(conv.inputs) > 2 else None
            params = [const_array(v) for v in bn.inputs[1:5]]
            if w is None or w.dtype != np.float32 or any(p is None for p in params):
                continue
            if len(conv.inputs) > 2 and conv.inputs[2] is not None and b is None:
                continue
            gamma, beta, mean, var = (np.asarray(p, dtype=np.float64).reshape(-1) for p in params)
            k = gamma / np.sqrt(var + bn.attributes.get_float("epsilon", 1e-5))
            w2 = (w.astype(np.float64) * k.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
            b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64).reshape(-1)
            b2 = ((b0 - mean) * k + beta).astype(np.float32)
            base = conv.name or conv.outputs[0].name
            if len(conv.inputs) < 3:
                conv.resize_inputs(3)
            conv.replace_input_with(1, new_initializer(graph, f"{base}.W_bnfold", w2))
            conv.replace_input_with(2, new_initializer(graph, f"{base}.B_bnfold", b2))
            out, conv_out = bn.outputs[0], conv.outputs[0]
            conv_out.shape = out.shape or conv_out.shape
            conv_out.type = out.type or conv_out.type
            was_output, out_name = out.is_graph_output(), out.name
            ir.convenience.replace_all_uses_with(out, conv_out, replace_graph_outputs=True)
            graph.remove(bn, safe=True)
            if was_output:
                conv_out.name = out_name
            self.folded[bn.name or out_name] = conv.name or conv_out.name
        return ir.passes.PassResult(model, bool(self.folded))

    @staticmethod
    def _conv_before(bn: ir.Node) -> ir.Node | None:
        if not is_std(bn, "BatchNormalization") or len(bn.outputs) != 1 or bn.inputs[0] is None:
            return None
        if bn.attributes.get_int("training_mode", 0):
            return None
        conv = bn.inputs[0].producer()
        if not is_std(conv, "Conv") or single_consumer(conv.outputs[0]) is not bn:
            return None
        return conv


class FoldChannelScalePass(ir.passes.InPlacePass):
    """Fold a constant per-output-channel scale (ConvNeXt's layer scale, ``y * gamma``) into the weight layer before
    it: ``Mul(Conv(x, W, b), c)`` with c of ``[C, 1, 1]`` (or ``[1, C, 1, 1]``, or one value), and ``Mul(Add(MatMul(x,
    W), b), c)`` with c of ``[C]``, also seen through one Transpose between the layer and the Mul (timm's
    ``permute(0, 3, 1, 2)`` before ``mul(gamma.reshape(1, -1, 1, 1))``). W and b are scaled per output channel (in
    float64, rounded once to float32), as BatchNorm folding does; every value on the way has the Mul as its only reader.
    ``folded`` maps the Mul's name to the layer's. The weight layer can then take the residual Add that follows."""

    def __init__(self) -> None:
        super().__init__()
        self.folded: dict[str, str] = {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        for mul in list(graph):
            if is_std(mul, "Mul") and len(mul.inputs) == 2:
                self._fold(graph, mul)
        return ir.passes.PassResult(model, bool(self.folded))

    def _fold(self, graph: ir.Graph, mul: ir.Node) -> bool:
        a, b = mul.inputs
        side = 1 if const_array(b) is not None else 0 if const_array(a) is not None else None
        if side is None or mul.inputs[1 - side] is None:
            return False
        c, v = const_array(mul.inputs[side]), mul.inputs[1 - side]
        if c.dtype != np.float32 or v.shape is None or c.ndim > len(v.shape):
            return False
        rank = len(v.shape)
        node, perm, reader = v.producer(), list(range(rank)), mul
        if is_std(node, "Transpose") and single_consumer(node.outputs[0]) is mul:
            given = attr_value(node, "perm", None)
            perm = [int(i) for i in given] if given is not None else list(reversed(range(rank)))
            v, reader = node.inputs[0], node
            node = v.producer() if v is not None else None
        layer, bias_add = None, None
        if is_std(node, "Conv") and single_consumer(node.outputs[0]) is reader:
            layer, channel = node, 1
        elif is_std(node, "Add") and single_consumer(node.outputs[0]) is reader:
            x, y = node.inputs
            bias_side = 1 if const_array(y) is not None else 0 if const_array(x) is not None else None
            mm = node.inputs[1 - bias_side].producer() if bias_side is not None else None
            if is_std(mm, "MatMul") and single_consumer(mm.outputs[0]) is node:
                layer, bias_add, channel = mm, node, rank - 1
        if layer is None or len(perm) != rank or sorted(perm) != list(range(rank)):
            return False
        w = const_array(layer.inputs[1]) if len(layer.inputs) > 1 else None
        if w is None or w.dtype != np.float32 or (layer.op_type == "MatMul" and w.ndim != 2):
            return False
        out_c = w.shape[0] if layer.op_type == "Conv" else w.shape[1]
        # the scale's one non-unit axis (right-aligned against the Mul's input) must be where the channels are
        where = perm.index(channel)  # the channel axis in the Mul's input
        dims = [1] * (rank - c.ndim) + list(c.shape)
        if any(d != 1 for i, d in enumerate(dims) if i != where) or dims[where] not in (1, out_c):
            return False
        if any(o.is_graph_output() for o in mul.outputs):
            return False
        scale = np.broadcast_to(c.astype(np.float64).reshape(-1), (out_c,))
        base = layer.name or layer.outputs[0].name
        if layer.op_type == "Conv":
            bias = const_array(layer.inputs[2]) if len(layer.inputs) > 2 and layer.inputs[2] is not None else None
            if len(layer.inputs) > 2 and layer.inputs[2] is not None and bias is None:
                return False
            w2 = (w.astype(np.float64) * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
            layer.replace_input_with(1, new_initializer(graph, f"{base}.W_scaled", w2))
            if bias is not None:
                layer.replace_input_with(
                    2, new_initializer(graph, f"{base}.B_scaled", (bias * scale).astype(np.float32))
                )
        else:
            bias_slot = 1 if const_array(bias_add.inputs[1]) is not None else 0
            bias = const_array(bias_add.inputs[bias_slot])
            if (
                bias.dtype != np.float32
                or bias.size not in (1, out_c)
                or bias.ndim > rank  # a bias of higher rank makes the Add's output so
                or bias.ndim > 1
                and bias.shape[:-1] != (1,) * (bias.ndim - 1)
            ):
                return False
            w2 = (w.astype(np.float64) * scale.reshape(1, -1)).astype(np.float32)
            b2 = (np.broadcast_to(bias.astype(np.float64).reshape(-1), (out_c,)) * scale).astype(np.float32)
            layer.replace_input_with(1, new_initializer(graph, f"{base}.W_scaled", w2))
            bias_add.replace_input_with(bias_slot, new_initializer(graph, f"{base}.B_scaled", b2))
        out = mul.outputs[0]
        ir.convenience.replace_all_uses_with(out, mul.inputs[1 - side])
        graph.remove(mul, safe=True)
        self.folded[mul.name or out.name] = layer.name or layer.outputs[0].name
        return True


class UniqueNodeNamesPass(ir.passes.InPlacePass):
    """Give every node of the main graph a unique, non-empty name (``<op>_<index>`` where it has none)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        taken: set[str] = set()
        modified = False
        for i, node in enumerate(model.graph):
            name = node.name or f"{node.op_type}_{i}"
            while name in taken:
                name = f"{name}_{i}"
            if name != node.name:
                node.name = name
                modified = True
            taken.add(name)
        return ir.passes.PassResult(model, modified)


@dataclasses.dataclass
class Prepared:
    """The prepared model and what preparation did (for the report)."""

    model: ir.Model
    source_opset: int
    folded: dict[str, str]  # BatchNormalization name -> Conv name
    source_nodes: list[tuple[str, str]]  # (name, op type) of the nodes matching sees, before BatchNorm folding
    removed: dict[str, int]  # op type -> how many nodes of it preparation removed (Identity, Constant, folded ops)
    initializer_inputs: int = 0  # graph inputs dropped because they are initializers (weights)
    scaled: dict[str, str] = dataclasses.field(default_factory=dict)  # channel-scale Mul name -> weight layer name

    def note(self) -> str:
        """One report line about the preparation."""
        parts = [f"{n} {op}" for op, n in sorted(self.removed.items(), key=lambda kv: (-kv[1], kv[0]))]
        done = [f"opset {self.source_opset} converted to {TARGET_OPSET}"] if self.source_opset != TARGET_OPSET else []
        if parts:
            done.append("removed " + ", ".join(parts) + " (Identity, Constant nodes lifted, constant subgraphs folded)")
        if self.initializer_inputs:
            done.append(f"{self.initializer_inputs} initializers removed from the graph inputs (they are weights)")
        if self.folded:
            done.append(f"{len(self.folded)} BatchNormalization folded into Conv")
        if self.scaled:
            done.append(f"{len(self.scaled)} per-channel scale Mul folded into the weight layer before it")
        return "prepared the graph: " + ("; ".join(done) if done else "nothing to change")


def _run(passes: ir.passes.PassBase, model: ir.Model) -> ir.Model:
    """Run ``passes``; a QuantizeError raised inside comes out as itself, anything else as an internal error."""
    try:
        return passes(model).model
    except ir.passes.PassError as exc:
        cause = exc.__cause__
        if isinstance(cause, QuantizeError):
            raise cause from None
        raise QuantizeError(
            f"internal error while preparing the graph ({type(cause).__name__ if cause else 'PassError'}: "
            f"{cause or exc}); please report it with the model"
        ) from exc


def prepare(model: ir.Model) -> Prepared:
    """Run the preparation passes on ``model`` (in place) and return it with what they did."""
    check_model(model)
    source_opset = default_opset(model)
    before = collections.Counter(n.op_type for n in model.graph)
    inputs_before = len(model.graph.inputs)
    first = ir.passes.Sequential(
        common.InlinePass(),  # model-local functions (exports of modules as functions) become plain nodes
        common.RemoveInitializersFromInputsPass(),  # IR < 4 style: weights listed as graph inputs are constants
    )
    model = convert_opset(_run(first, model), TARGET_OPSET)
    cleanup = ir.passes.Sequential(
        RemoveIdentityPass(),
        common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
        # the static dimensions that Shape -> Slice/Gather folding reads (exports do not always record them); twice,
        # as a folded shape computation can make more dimensions static (a head size from Shape(x)[-1] / heads)
        common.ShapeInferencePass(check_type=False, strict_mode=False, data_prop=True),
        FoldConstantsPass(),
        common.ShapeInferencePass(check_type=False, strict_mode=False, data_prop=True),
        FoldConstantsPass(),
        common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
        RemoveIdentityPass(),
        common.DeduplicateHashedInitializersPass(),
        common.RemoveUnusedNodesPass(),
        common.RemoveUnusedOpsetsPass(),
        UniqueNodeNamesPass(),
        common.NameFixPass(),
    )
    model = _run(cleanup, model)
    after = collections.Counter(n.op_type for n in model.graph)
    removed = {op: before[op] - after.get(op, 0) for op in before if before[op] > after.get(op, 0)}
    source_nodes = [(n.name, n.op_type) for n in model.graph]
    lifted_inputs = inputs_before - len(model.graph.inputs)
    bn, scale = FoldBatchNormPass(), FoldChannelScalePass()
    finish = ir.passes.Sequential(
        bn,
        scale,
        common.RemoveUnusedNodesPass(),
        common.ShapeInferencePass(check_type=False, strict_mode=False, data_prop=True),
    )
    model = _run(finish, model)
    model.ir_version = max(model.ir_version or 0, 10)  # opset 21 (and FP8 types) need IR version 10
    return Prepared(model, source_opset, dict(bn.folded), source_nodes, removed, lifted_inputs, dict(scale.folded))
