"""The convolutions a quantized export runs, as per-layer benchmark cases (bench/conv_layers.py).

Shapes come from the float export (ONNX shape inference); what the GPU runs for each layer (fused activation,
residual input, FP8 or float output, group, strides, pads) comes from the FP8Conv node the quantizer wrote for it.
An FP8Conv belongs to the float Conv of the same node name: the quantizer keeps names and names unnamed nodes
with its UniqueNodeNamesPass, which is applied to the float model here too. A float Conv without an FP8Conv was left
in float by the quantizer and is reported, not timed.
No GPU or torch needed here.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

import onnx
import onnx_ir as ir
from onnx import helper, shape_inference

from fp8ort.quantization.prepare import UniqueNodeNamesPass

FP8_TYPES = {
    onnx.TensorProto.FLOAT8E4M3FN,
    onnx.TensorProto.FLOAT8E4M3FNUZ,
    onnx.TensorProto.FLOAT8E5M2,
    onnx.TensorProto.FLOAT8E5M2FNUZ,
}


@dataclass(frozen=True)
class ConvLayer:
    """One convolution as the GPU runs it (NHWC input of c x h x w per image)."""

    c: int
    h: int
    w: int
    m: int
    kh: int
    kw: int
    stride: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]
    group: int
    activation: str  # the FP8Conv's activation attribute ("" none)
    residual: bool  # a Z input (added before the activation)
    fp8_out: bool  # FP8 output (else float)

    @property
    def pointwise(self) -> bool:
        """1x1, stride 1, no padding, one group: the convolution is a GEMM over the pixels."""
        return (self.kh, self.kw, self.stride, self.pads, self.group) == (1, 1, (1, 1), (0, 0, 0, 0), 1)

    @property
    def depthwise(self) -> bool:
        return self.group == self.c == self.m

    def macs(self, batch: int) -> int:
        oh = (self.h + self.pads[0] + self.pads[2] - self.dilation[0] * (self.kh - 1) - 1) // self.stride[0] + 1
        ow = (self.w + self.pads[1] + self.pads[3] - self.dilation[1] * (self.kw - 1) - 1) // self.stride[1] + 1
        return batch * oh * ow * self.m * (self.c // self.group) * self.kh * self.kw


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _conv_geometry(attrs: dict) -> tuple:
    """(strides, pads (top, left, bottom, right), dilations, group) of a Conv or FP8Conv."""
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise ValueError("Conv with auto_pad: export with explicit pads (the quantizer writes explicit pads)")
    pads = tuple(attrs.get("pads", [0, 0, 0, 0]))
    return (
        tuple(attrs.get("strides", [1, 1])),
        (pads[0], pads[1], pads[2], pads[3]),
        tuple(attrs.get("dilations", [1, 1])),
        int(attrs.get("group", 1)),
    )


def model_convs(fp32: onnx.ModelProto, fp8: onnx.ModelProto) -> tuple[list[tuple[ConvLayer, int]], list[str]]:
    """([(layer, how many times the model runs it)] in first-use order, [float Convs left unquantized])."""
    named = ir.from_proto(fp32)
    UniqueNodeNamesPass()(named)
    fp32 = ir.to_proto(named)
    inferred = shape_inference.infer_shapes(fp32)
    shapes = {
        vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input)
    }
    float_inits = {i.name: list(i.dims) for i in fp32.graph.initializer}
    fp8_inits = {i.name: list(i.dims) for i in fp8.graph.initializer}
    fp8_convs = {n.name: n for n in fp8.graph.node if n.op_type == "FP8Conv" and n.domain == "com.fp8ort"}
    float_names = {n.name for n in fp32.graph.node if n.op_type == "Conv"}
    unmatched = sorted(set(fp8_convs) - float_names)
    if unmatched:
        raise ValueError(
            f"FP8Conv nodes {unmatched[:5]} have no float Conv of their name: pass the float model the quantized one "
            "was made from"
        )

    counts: collections.Counter = collections.Counter()
    left_float: list[str] = []
    for node in fp32.graph.node:
        if node.op_type != "Conv":
            continue
        if node.input[1] not in float_inits:
            raise ValueError(f"Conv {node.name!r}: its weight is not an initializer")
        wshape = float_inits[node.input[1]]
        if len(wshape) != 4:
            raise ValueError(f"Conv {node.name!r}: only 2-D convolutions are benchmarked (weight {wshape})")
        stride, _, dilation, group = _conv_geometry(_attrs(node))
        match = fp8_convs.get(node.name)
        if match is None:
            left_float.append(node.name)
            continue
        qattrs = _attrs(match)
        qstride, pads, qdil, qgroup = _conv_geometry(qattrs)
        if fp8_inits.get(match.input[1]) != wshape or (qstride, qdil, qgroup) != (stride, dilation, group):
            raise ValueError(
                f"FP8Conv {match.name!r} (weight {fp8_inits.get(match.input[1])}, strides {qstride}, group {qgroup}) "
                f"does not match the float Conv of that name (weight {wshape}, strides {stride}, group {group})"
            )
        xshape = shapes.get(node.input[0])
        if not xshape or len(xshape) != 4 or None in xshape[1:]:
            raise ValueError(f"Conv {node.name!r}: input shape {xshape} is not known after shape inference")
        act = qattrs.get("activation", b"")
        out_type = int(qattrs.get("output_dtype", onnx.TensorProto.FLOAT))
        layer = ConvLayer(
            c=xshape[1],
            h=xshape[2],
            w=xshape[3],
            m=wshape[0],
            kh=wshape[2],
            kw=wshape[3],
            stride=stride,
            pads=pads,
            dilation=dilation,
            group=group,
            activation=act.decode() if isinstance(act, bytes) else str(act),
            residual=len(match.input) > 5 and match.input[5] != "",
            fp8_out=out_type in FP8_TYPES,
        )
        counts[layer] += 1
    return list(counts.items()), left_float
