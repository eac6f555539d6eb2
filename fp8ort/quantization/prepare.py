"""Graph preparation before matching: onnx-ir passes that make every export of a model look the same.

Exporters write the same network in different ways: TorchScript (``dynamo=False``) hides deduplicated initializers
behind ``Identity`` nodes and writes scalars as ``Constant`` nodes, dynamo writes initializers and other opsets.
The rules (``rules.py``) only see constants held by initializers, so before matching the model goes through:

0. onnx-ir's ``InlinePass`` (model-local functions) and ``RemoveInitializersFromInputsPass`` (IR < 4 exports list
   every weight as a graph input too; here they are constants);
1. ``ConvertOpsetPass``: the default-domain opset becomes ``TARGET_OPSET`` (onnxscript's version converter, with
   onnx's C converter as fallback); models outside ``MIN_OPSET``..``TARGET_OPSET`` that cannot be converted are a
   ``QuantizeError``;
2. ``RemoveIdentityPass`` (main graph) and onnx-ir's ``LiftConstantsToInitializersPass`` (every ``Constant`` node);
3. ``FoldConstantsPass``: onnxscript's constant folding of small (shape-only) subgraphs;
4. ``FoldBatchNormPass``: inference BatchNormalization into the Conv before it;
5. onnx-ir's ``DeduplicateHashedInitializersPass``, ``RemoveUnusedNodesPass``, ``RemoveUnusedOpsetsPass``;
6. ``UniqueNodeNamesPass`` (every node gets a unique name: the report and the rewritten nodes use them);
7. onnx-ir's ``ShapeInferencePass`` with data propagation (symbolic dimensions stay symbolic).
"""

from __future__ import annotations

import collections
import dataclasses
import logging

import numpy as np
import onnx
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


class ConvertOpsetPass(ir.passes.InPlacePass):
    """Bring the default-domain opset to ``target`` (up or down), or raise a ``QuantizeError``."""

    def __init__(self, target: int = TARGET_OPSET) -> None:
        super().__init__()
        self.target = target

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        version = default_opset(model)
        if version == self.target:
            return ir.passes.PassResult(model, False)
        from onnxscript.version_converter import ConvertVersionPass

        problem = ""
        log = logging.getLogger("onnxscript.version_converter")
        level = log.level
        log.setLevel(logging.ERROR)  # it warns when it hands opsets below 18 to onnx's converter: expected here
        try:
            ConvertVersionPass(self.target, fallback=True)(model)
        except Exception as exc:  # the converters raise many types: report it as the user's fix
            problem = f" ({type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''})"
        finally:
            log.setLevel(level)
        if default_opset(model) != self.target:
            supported = f"fp8ort supports ai.onnx opsets {MIN_OPSET} to {self.target}"
            raise QuantizeError(
                f"the model uses ai.onnx opset {version}; {supported} and converting it to {self.target} failed"
                f"{problem}; re-export the model with opset_version between {MIN_OPSET} and {self.target} (e.g. "
                f"torch.onnx.export(..., opset_version={self.target})) or convert it with "
                f"onnx.version_converter.convert_version(model, {self.target})"
            )
        model.opset_imports.pop("ai.onnx", None)
        model.graph.opset_imports.pop("ai.onnx", None)
        model.opset_imports[""] = self.target
        model.graph.opset_imports[""] = self.target
        return ir.passes.PassResult(model, True)


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


class FoldConstantsPass(ir.passes.InPlacePass):
    """onnxscript's constant folding, limited to small inputs (shape arithmetic, scalars); weights are not touched."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        from onnxscript.optimizer import fold_constants

        result = fold_constants(model, input_size_limit=FOLD_INPUT_LIMIT, output_size_limit=FOLD_OUTPUT_LIMIT)
        for v in model.graph.initializers.values():  # folded Transposes can leave strided arrays behind
            t = v.const_value
            if isinstance(t, ir.Tensor) and isinstance(t.raw, np.ndarray) and not t.raw.flags.c_contiguous:
                v.const_value = ir.Tensor(np.ascontiguousarray(t.raw), name=t.name)
        return ir.passes.PassResult(model, bool(result.modified))


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
    cleanup = ir.passes.Sequential(
        common.InlinePass(),  # model-local functions (exports of modules as functions) become plain nodes
        common.RemoveInitializersFromInputsPass(),  # IR < 4 style: weights listed as graph inputs are constants
        ConvertOpsetPass(TARGET_OPSET),
        RemoveIdentityPass(),
        common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
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
    bn = FoldBatchNormPass()
    finish = ir.passes.Sequential(
        bn,
        common.RemoveUnusedNodesPass(),
        common.ShapeInferencePass(check_type=False, strict_mode=False, data_prop=True),
    )
    model = _run(finish, model)
    model.ir_version = max(model.ir_version or 0, 10)  # opset 21 (and FP8 types) need IR version 10
    return Prepared(model, source_opset, dict(bn.folded), source_nodes, removed, lifted_inputs)
