"""A second embedding lookup whose ids are all one constant folds into the first lookup's table.

BERT-style encoders exported without ``token_type_ids`` look up the token-type table with a buffer of zeros, sliced
to the sequence length and expanded to the batch, then add that to the word embeddings:
``Add(Gather(W, input_ids), Gather(U, Expand(GatherElements(zeros, positions), shape_of_input_ids)))``. The second
lookup is the row ``U[0]`` for every token, computed by ~15 shape and index nodes (Shape, Gather, Unsqueeze,
Concat, Reshape, Equal, Where, Expand, GatherElements) that a GPU must wait for on the host at every run.
``FoldConstantLookupPass`` replaces the pair by one lookup in the table ``W + U[c]``, rows added once here with the
float32 addition the Add made per token (so the same bits), and the index nodes die with the unused-node pass.

It applies only where that is provably the same model, each condition checked:

- ``Add(Gather(W, ids), Gather(U, I))`` in either order: W and U float32 constants ``[V, H]`` and ``[V', H]``, both
  Gathers on axis 0, and the Add the only reader of both lookups;
- every element of I is one constant c with ``-V' <= c < V'``: I comes from a constant whose elements all equal c
  through ops that only move or repeat elements;
- I cannot be larger than ``ids`` in a run that completes: its shape equals ``ids``' shape statically, or
  I = ``Expand(A, T)`` with T evaluated symbolically to ``ids``' own shape (through Shape, Gather, Unsqueeze,
  Concat, Reshape, Equal, Where, Cast) and each dimension of A the constant 1 or at most the matching dimension of T
  (a static size no larger, or a Slice that ends at that dimension). Expand then yields T whenever it succeeds, the
  Add's result has the word lookup's shape, and each of its elements is ``W[id] + U[c]``. Dimensions are compared
  by value, or by name where the model names them: the dynamo exporter takes the shape from ``attention_mask``,
  declared ``[batch, seq]`` as ``input_ids`` is, and the model's inputs are taken to have the sizes it declares.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir as ir

from .prepare import const_array, is_std, new_initializer, single_consumer

# ops whose output elements are all elements of input 0 (moved, repeated or dropped): a tensor whose elements all
# equal c stays so through them
MOVES = frozenset(
    {"Expand", "GatherElements", "Gather", "Reshape", "Unsqueeze", "Squeeze", "Slice", "Tile", "Transpose",
     "Identity", "Flatten"}
)  # fmt: skip

# ops sym_value evaluates
SYM_OPS = frozenset({"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Cast", "Equal", "Where"})

Sym = object  # a symbolic scalar: an int, ("sym", name) for a named dimension, or ("dim", id(value), axis)


def uniform_value(v: ir.Value | None, depth: int = 0) -> int | None:
    """The one integer every element of ``v`` equals, if that follows from the graph, else None."""
    if v is None or depth > 32:
        return None
    a = const_array(v)
    if a is not None:
        if a.size == 0 or a.dtype.kind not in "iu" or not np.all(a == a.flat[0]):
            return None
        return int(a.flat[0])
    node = v.producer()
    if node is None or node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type in MOVES:
        return uniform_value(node.inputs[0], depth + 1)
    if node.op_type == "Cast" and node.attributes.get_int("to", 0) in (6, 7):  # INT32, INT64
        return uniform_value(node.inputs[0], depth + 1)
    return None


def _dims(v: ir.Value) -> list[Sym] | None:
    """v's shape as symbolic scalars (None when its rank is unknown): a named symbolic dimension is that name (the
    same name is the same size, as the model declares it), an unnamed one is this value's own."""
    if v.shape is None:
        return None
    out: list[Sym] = []
    for i, d in enumerate(v.shape):
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, ir.SymbolicDim) and d.value:
            out.append(("sym", d.value))
        else:
            out.append(("dim", id(v), i))
    return out


def _ints(a: np.ndarray) -> list[int] | int:
    return int(a) if a.ndim == 0 else [int(x) for x in a.reshape(-1)]


def sym_value(v: ir.Value | None, depth: int = 0):
    """A small int64 tensor's value as symbolic scalars: a scalar, a list (rank 1), or None when unknown."""
    if v is None or depth > 32:
        return None
    a = const_array(v)
    if a is not None:
        if a.ndim > 1 or a.size > 64:
            return None
        if a.dtype == np.bool_:
            return bool(a) if a.ndim == 0 else [bool(x) for x in a]
        return _ints(a) if a.dtype.kind in "iu" else None
    node = v.producer()
    if node is None or node.domain not in ("", "ai.onnx") or node.op_type not in SYM_OPS:
        return None
    op = node.op_type
    if op == "Shape":  # its input's values are not read
        dims = _dims(node.inputs[0])
        if dims is None:
            return None
        start = node.attributes.get_int("start", 0)
        end = node.attributes.get_int("end", len(dims))
        return dims[slice(start, end)]
    ins = [sym_value(x, depth + 1) if x is not None else None for x in node.inputs]
    if op == "Gather" and node.attributes.get_int("axis", 0) == 0 and isinstance(ins[0], list):
        idx = ins[1]
        n = len(ins[0])
        pick = lambda i: ins[0][i + n if i < 0 else i] if isinstance(i, int) and -n <= i < n else None  # noqa: E731
        if isinstance(idx, int):
            return pick(idx)
        if isinstance(idx, list) and all(isinstance(i, int) for i in idx):
            out = [pick(i) for i in idx]
            return None if any(x is None for x in out) else out
        return None
    if op == "Unsqueeze" and ins[0] is not None and not isinstance(ins[0], list):
        return [ins[0]] if ins[1] in ([0], [-1]) or node.attributes.get("axes") is not None else None
    if op == "Squeeze" and isinstance(ins[0], list) and len(ins[0]) == 1:
        return ins[0][0]
    if op == "Concat" and node.attributes.get_int("axis", 0) in (0, -1) and all(isinstance(x, list) for x in ins):
        return [d for x in ins for d in x]
    if op == "Reshape" and isinstance(ins[0], list) and isinstance(ins[1], list) and len(ins[1]) == 1:
        return ins[0] if ins[1][0] in (-1, len(ins[0])) else None
    if op == "Cast" and node.attributes.get_int("to", 0) in (6, 7):
        return ins[0]
    if op == "Equal" and isinstance(ins[0], list) and isinstance(ins[1], list) and len(ins[0]) == len(ins[1]):
        return _equal(ins[0], ins[1])
    if op == "Where" and all(isinstance(x, list) for x in ins) and len({len(x) for x in ins}) == 1:
        if not all(isinstance(c, bool) for c in ins[0]):
            return None
        return [a if c else b for c, a, b in zip(*ins)]
    return None


def _equal(xs: Sequence, ys: Sequence) -> list[bool] | None:
    out = []
    for x, y in zip(xs, ys):
        if isinstance(x, int) and isinstance(y, int):
            out.append(x == y)
        elif x == y:  # the same run-time dimension
            out.append(True)
        elif (isinstance(x, int) and x < 0) or (isinstance(y, int) and y < 0):
            out.append(False)  # a dimension is never negative
        else:
            return None
    return out


def _dim_at_most(v: ir.Value, axis: int, bound: Sym) -> bool:
    """Whether dimension ``axis`` of ``v`` is 1 or provably at most ``bound`` in every run."""
    if v.shape is not None and axis < len(v.shape):
        d = v.shape[axis]
        if isinstance(d, int) and (d == 1 or (isinstance(bound, int) and d <= bound)):
            return True
    node = v.producer()
    if node is None or node.domain not in ("", "ai.onnx"):
        return False
    if node.op_type == "GatherElements":  # the output has the shape of the indices
        return _dim_at_most(node.inputs[1], axis, bound)
    if node.op_type == "Slice" and len(node.inputs) >= 4:
        starts, ends, axes = (sym_value(x) for x in node.inputs[1:4])
        steps = sym_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
        if not (isinstance(starts, list) and isinstance(ends, list) and isinstance(axes, list)):
            return False
        if steps is not None and steps != [1] * len(axes):
            return False
        rank = len(v.shape) if v.shape is not None else None
        norm = [a + rank if rank is not None and isinstance(a, int) and a < 0 else a for a in axes]
        if axis not in norm:  # not sliced along this axis: the input's dimension
            return _dim_at_most(node.inputs[0], axis, bound)
        k = norm.index(axis)
        # a slice from a non-negative start to `end` has at most `end` elements
        return isinstance(starts[k], int) and starts[k] >= 0 and ends[k] == bound
    return False


def _lookup(v: ir.Value) -> tuple[ir.Node, np.ndarray] | None:
    """The Gather (axis 0) that produces ``v`` from a float32 [V, H] constant, and that constant."""
    node = v.producer()
    if not is_std(node, "Gather") or node.attributes.get_int("axis", 0) != 0:
        return None
    table = const_array(node.inputs[0])
    if table is None or table.dtype != np.float32 or table.ndim != 2:
        return None
    return node, table


def _same_shape_when_run(indices: ir.Value, ids: ir.Value) -> bool:
    """Whether ``indices`` has ``ids``' shape in every run that completes (see the module docstring)."""
    if indices.shape is not None and ids.shape is not None and len(indices.shape) == len(ids.shape):
        if all(isinstance(a, int) and a == b for a, b in zip(indices.shape, ids.shape)):
            return True
    node = indices.producer()
    if not is_std(node, "Expand"):
        return False
    target, ids_dims = sym_value(node.inputs[1]), _dims(ids)
    if not isinstance(target, list) or ids_dims is None or target != ids_dims:
        return False
    src = node.inputs[0]
    if src.shape is None or len(src.shape) > len(target):
        return False
    lead = len(target) - len(src.shape)
    return all(_dim_at_most(src, i, target[lead + i]) for i in range(len(src.shape)))


class FoldConstantLookupPass(ir.passes.InPlacePass):
    """``Add(Gather(W, ids), Gather(U, c everywhere))`` -> ``Gather(W + U[c], ids)`` where provably the same."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for add in list(graph):
            if not is_std(add, "Add") or len(add.inputs) != 2 or any(x is None for x in add.inputs):
                continue
            for word_v, other_v in (add.inputs, add.inputs[::-1]):
                if self._fold(graph, add, word_v, other_v):
                    modified = True
                    break
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _fold(graph: ir.Graph, add: ir.Node, word_v: ir.Value, other_v: ir.Value) -> bool:
        word, other = _lookup(word_v), _lookup(other_v)
        if word is None or other is None or word[0] is other[0]:
            return False
        (gw, w), (gu, u) = word, other
        if w.shape[1] != u.shape[1] or single_consumer(word_v) is not add or single_consumer(other_v) is not add:
            return False
        c = uniform_value(gu.inputs[1])
        if c is None or not -u.shape[0] <= c < u.shape[0]:
            return False
        ids = gw.inputs[1]
        if ids is None or not _same_shape_when_run(gu.inputs[1], ids):
            return False
        folded = new_initializer(graph, f"{gw.inputs[0].name}.plus_{gu.inputs[0].name}", w + u[c])
        gw.replace_input_with(0, folded)
        y = add.outputs[0]
        was_output, name = y.is_graph_output(), y.name
        ir.convenience.replace_all_uses_with(y, word_v, replace_graph_outputs=True)
        graph.remove(add, safe=True)
        if was_output:
            word_v.name = name
        word_v.shape = y.shape if y.shape is not None else word_v.shape
        return True
