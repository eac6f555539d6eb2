"""One projection for the query, key and value of a self-attention block (FP8Attention's packed form).

An encoder computes Q, K and V from one tensor: three FP8MatMuls with the same ``A`` and ``a_scale``, each with its
own ``[K, N]`` weight, per-column ``b_scale`` and bias, writing float32 ``[B, S, N]`` for one FP8Attention. Where that
holds, ``PackQkvPass`` puts the three weights, scales and biases side by side in one FP8MatMul (``N`` -> ``3N``) whose
``[B, S, 3N]`` output FP8Attention reads in its packed form (``K`` and ``V`` absent, docs/operators.md).

Each output column is computed as before: the same sum over ``K`` of the same FP8 products, times the same
``a_scale * b_scale[n]``, plus the same ``bias[n]`` (bit-identical on the CPU kernels; GPU kernels may sum in another
order for another ``N``, as the contract's float32 accumulation allows). The GPU runs one GEMM with one epilogue
instead of three of each, for wider tiles at large batch and a third of the launches at batch 1.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from .prepare import attr_value, const_array, new_initializer, single_consumer

FP8ORT_DOMAIN = "com.fp8ort"


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


class PackQkvPass(ir.passes.InPlacePass):
    """Three FP8MatMul projections of one input feeding one FP8Attention -> one FP8MatMul and the packed form."""

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
        graph.insert_before(attn, node)
        attn.replace_input_with(0, y)
        attn.replace_input_with(1, None)
        attn.replace_input_with(2, None)
        for p in projs:
            graph.remove(p, safe=True)
        return True
