"""An attention mask that FP8Attention broadcasts itself needs no Expand in front of it.

Hugging Face encoders build the additive mask from ``attention_mask [B, S]``: ``mask[:, None, None, :]`` expanded to
``[B, 1, S, T]``, then cast, ``1 - m`` and a ``Where`` that puts the float minimum where the mask is 0. The Expand's
target shape comes from a dozen shape nodes (``Shape``, ``Gather``, ``Unsqueeze``, ``Concat``, ``Reshape``, ``Equal``,
``Where``) whose result the GPU must copy to the host before the Expand runs. ``FP8Attention`` broadcasts
``attn_bias`` to the scores ``[B, H, S, T]`` by NumPy rules, and element-wise ops with scalar constants commute with
broadcasting, so feeding the un-expanded mask gives the same scores: ``DropMaskExpandPass`` removes such an Expand
(the shape nodes then die with the unused-node pass), and the attention reads ``[B, 1, 1, T]`` instead of
``[B, 1, S, T]``. The numbers do not change.

Why it holds: where the Expand input has a dimension other than 1, Expand keeps it (or fails); where it has 1, the
attention's own broadcast stretches it as Expand would; a missing leading dimension is added by both. A Cast to the
type its input already has is dropped by the same pass (the exports write ``Cast(to=BOOL)`` twice in a row).
"""

from __future__ import annotations

import onnx_ir as ir

from .prepare import is_std

FP8ORT_DOMAIN = "com.fp8ort"
ATTN_BIAS_INPUT = 3  # FP8Attention's attn_bias

# Element-wise ops whose result is the broadcast of their inputs' values, so that they commute with Expand when every
# other input is a scalar constant.
ELEMENTWISE = frozenset(
    {
        "Abs", "Add", "And", "Cast", "Div", "Equal", "Exp", "Greater", "GreaterOrEqual", "Less", "LessOrEqual",
        "Log", "Max", "Min", "Mul", "Neg", "Not", "Or", "Pow", "Reciprocal", "Relu", "Sigmoid", "Sqrt", "Sub",
        "Where", "Xor",
    }
)  # fmt: skip


def _scalar_constant(v: ir.Value) -> bool:
    """A constant of one element and rank <= 1 (a rank-1 [1] still broadcasts without adding a dimension to a mask of
    rank >= 1)."""
    c = v.const_value
    return c is not None and c.size == 1 and len(c.shape) <= 1


def _chain(bias: ir.Value) -> tuple[ir.Node, list[ir.Node]] | None:
    """The Expand behind ``bias`` and the element-wise nodes between them, or None when the path is anything else."""
    expand: ir.Node | None = None
    nodes: list[ir.Node] = []
    seen: set[int] = set()
    todo = [bias]
    while todo:
        v = todo.pop()
        node = v.producer()
        if node is None or id(node) in seen:
            if node is None:
                return None  # a graph input or an initializer of full size: nothing to drop
            continue
        seen.add(id(node))
        if is_std(node, "Expand"):
            if expand is not None and expand is not node:
                return None
            expand = node
            continue
        if node.domain not in ("", "ai.onnx") or node.op_type not in ELEMENTWISE or len(node.outputs) != 1:
            return None
        nodes.append(node)
        for x in node.inputs:
            if x is None:
                continue
            if not _scalar_constant(x):
                todo.append(x)
    if expand is None or expand.inputs[0] is None:
        return None
    return expand, nodes


def _only_feeds(values: list[ir.Value], inside: set[int]) -> bool:
    """Every use of each value is a node of the chain or an FP8Attention attn_bias; none is a graph output."""
    for v in values:
        if v.is_graph_output():
            return False
        for use in v.uses():
            n = use.node
            if id(n) in inside:
                continue
            if not (n.domain == FP8ORT_DOMAIN and n.op_type == "FP8Attention" and use.idx == ATTN_BIAS_INPUT):
                return False
    return True


class DropMaskExpandPass(ir.passes.InPlacePass):
    """Remove the Expand of an FP8Attention mask (through element-wise ops with scalar constants) and Casts to the
    type their input already has."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = self._drop_identity_casts(graph)
        biases = {
            id(n.inputs[ATTN_BIAS_INPUT]): n.inputs[ATTN_BIAS_INPUT]
            for n in graph
            if n.domain == FP8ORT_DOMAIN and n.op_type == "FP8Attention" and len(n.inputs) > ATTN_BIAS_INPUT
            if n.inputs[ATTN_BIAS_INPUT] is not None
        }
        # one Expand may feed the masks of several layers (a Where per layer): all its chains go together
        chains: dict[int, tuple[ir.Node, dict[int, ir.Node]]] = {}
        for bias in biases.values():
            found = _chain(bias)
            if found is None:
                continue
            expand, nodes = found
            chains.setdefault(id(expand), (expand, {}))[1].update({id(n): n for n in nodes})
        for expand, nodes in chains.values():
            if not _only_feeds([expand.outputs[0]] + [n.outputs[0] for n in nodes.values()], set(nodes)):
                continue
            x = expand.inputs[0]
            if x.shape is not None and len(x.shape) == 0:  # a constant of shape [1] would add a dimension
                continue
            ir.convenience.replace_all_uses_with(expand.outputs[0], x)
            graph.remove(expand, safe=True)
            for n in nodes.values():  # their values now have the shape of the Expand's input
                n.outputs[0].shape = None if x.shape is None else ir.Shape(list(x.shape))
            modified = True
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _drop_identity_casts(graph: ir.Graph) -> bool:
        modified = False
        for node in list(graph):
            if not is_std(node, "Cast") or node.inputs[0] is None or node.outputs[0].is_graph_output():
                continue
            to = node.attributes.get_int("to", -1)
            src = node.inputs[0].dtype
            if src is None or int(src) != to:
                continue
            ir.convenience.replace_all_uses_with(node.outputs[0], node.inputs[0])
            graph.remove(node, safe=True)
            modified = True
        return modified
