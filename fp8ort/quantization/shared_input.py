"""One FP8 quantization of a float tensor that several FP8 ops read alike.

FP8MatMul and FP8Conv quantize a high-precision input 0 (``A``/``X``) with their scale inside the op. Where several of
them read the same float tensor with the same constant scale into the same FP8 format (the query, key and value
projections of an encoder reading one LayerNormalization output), an ``FP8Quantize`` node quantizes it once and they
read its FP8 output: the contract's FP8-input form (``X`` already ``q(X, x_scale)``), so the numbers do not change;
the GPU does one quantization pass instead of one per reader.
"""

from __future__ import annotations

import onnx_ir as ir

FP8ORT_DOMAIN = "com.fp8ort"
READERS = ("FP8MatMul", "FP8Conv")


def _scale_of(node: ir.Node) -> float | None:
    scale = node.inputs[2] if len(node.inputs) > 2 else None
    if scale is None or scale.const_value is None or scale.const_value.size != 1:
        return None
    return float(scale.const_value.numpy().reshape(()))


class ShareInputQuantizePass(ir.passes.InPlacePass):
    """Insert one ``FP8Quantize`` for each float value read as input 0 by two or more FP8MatMul/FP8Conv nodes with
    equal constant scales and weight formats."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        values = list(graph.inputs) + [o for node in graph for o in node.outputs]
        modified = False
        for value in values:
            if value.dtype != ir.DataType.FLOAT:
                continue
            groups: dict[tuple[float, ir.DataType], list[ir.Node]] = {}
            for use in value.uses():
                node = use.node
                if node.domain != FP8ORT_DOMAIN or node.op_type not in READERS or use.idx != 0:
                    continue
                scale = _scale_of(node)
                weight = node.inputs[1]
                if scale is None or weight is None or weight.dtype is None:
                    continue
                groups.setdefault((scale, weight.dtype), []).append(node)
            for (_, fmt), readers in groups.items():
                if len(readers) < 2:
                    continue
                self._share(graph, value, fmt, readers)
                modified = True
        return ir.passes.PassResult(model, modified)

    @staticmethod
    def _share(graph: ir.Graph, value: ir.Value, fmt: ir.DataType, readers: list[ir.Node]) -> None:
        q = ir.Value(name=f"{value.name}.fp8", type=ir.TensorType(fmt), shape=value.shape)
        node = ir.Node(
            FP8ORT_DOMAIN,
            "FP8Quantize",
            [value, readers[0].inputs[2]],
            [ir.AttrInt64("output_dtype", int(fmt))],
            outputs=[q],
            name=f"{value.name}.quantize",
        )
        producer = value.producer()
        if producer is not None:
            graph.insert_after(producer, node)
        else:  # a graph input: before its first reader in graph order
            first = next(n for n in graph if n in readers)
            graph.insert_before(first, node)
        for reader in readers:
            reader.replace_input_with(0, q)
