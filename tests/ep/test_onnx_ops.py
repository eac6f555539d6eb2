"""Every standard ONNX op fp8ort's plugin EP registers, on every device, against onnxruntime's own CPU EP.

One table of cases (op, attributes, inputs, opset). Each case builds a one-node model whose data inputs have
symbolic dimensions (so ORT cannot check shapes at load time and our kernels see the bad inputs), runs it through
``fp8ort.InferenceSession(model, device=d, strict=True)`` (every node must run on Fp8OrtExecutionProvider) and
compares with ``providers=["CPUExecutionProvider"]``. float16 cases are compared with ORT run in float32 and rounded
to float16 when ORT's CPU EP has no float16 kernel (fp8ort computes float16 in float32 and rounds once). Error
cases check that a bad input gives a clear error naming the problem, not a crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import fp8ort
from fp8ort import ops

F32, F16, I64, I32, BOOL, U8 = (
    TensorProto.FLOAT,
    TensorProto.FLOAT16,
    TensorProto.INT64,
    TensorProto.INT32,
    TensorProto.BOOL,
    TensorProto.UINT8,
)
E4M3 = TensorProto.FLOAT8E4M3FN
NP_TYPES = {
    F32: np.float32,
    F16: np.float16,
    I64: np.int64,
    I32: np.int32,
    BOOL: np.bool_,
    U8: np.uint8,
    E4M3: ml_dtypes.float8_e4m3fn,
    TensorProto.DOUBLE: np.float64,
}
BIG = np.iinfo(np.int64).max


@dataclass
class R:
    """A random input: shape, ONNX element type, value range (uniform; integers in [lo, hi))."""

    shape: tuple
    dtype: int = F32
    lo: float = -3.0
    hi: float = 3.0

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.dtype == BOOL:
            return rng.random(self.shape) < 0.5
        if self.dtype in (I64, I32, U8):
            return rng.integers(int(self.lo), int(self.hi), size=self.shape).astype(NP_TYPES[self.dtype])
        return rng.uniform(self.lo, self.hi, size=self.shape).astype(NP_TYPES[self.dtype])


def ints(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


@dataclass
class Case:
    id: str
    op: str
    inputs: list  # R (random), np.ndarray (fixed value), or None (optional input left out)
    attrs: dict = field(default_factory=dict)
    opset: int = 17
    outputs: int = 1
    out_types: list | None = None  # default: the first input's type
    error: str | None = None  # regex the error message must match
    atol: float = 1e-5
    rtol: float = 1e-5
    reference: str = "ort"  # "onnx": onnx.reference where ORT's CPU EP departs from the ONNX spec
    # An error that depends on tensor values (an index out of range, an integer divisor 0) cannot be reported from
    # the GPU within a run (that would need a host synchronization): there the op gives a defined value instead,
    # gpu_value(feeds) (docs/plugin-ep.md, "GPU data-dependent checks").
    gpu_value: Any = None
    # Not registered on the GPU device (reason): there strict=True refuses naming the op, and without it the node
    # runs on ORT's CPU EP with a PlacementWarning and still gives the reference's result.
    cpu_only: str | None = None

    def __str__(self) -> str:
        return self.id


def _type_of(v: Any) -> int:
    if isinstance(v, R):
        return v.dtype
    return {np.dtype(t): k for k, t in NP_TYPES.items()}[np.dtype(v.dtype)]


def _model(case: Case, widen_f16: bool = False) -> onnx.ModelProto:
    """The one-node model of a case; widen_f16 turns float16 tensors into float32 (reference runs)."""

    def t(k: int) -> int:
        return F32 if widen_f16 and k == F16 else k

    graph_inputs, names = [], []
    for i, v in enumerate(case.inputs):
        if v is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        shape = v.shape
        dims = [f"{name}_d{j}" for j in range(len(shape))]
        graph_inputs.append(helper.make_tensor_value_info(name, t(_type_of(v)), dims))
    first = _type_of(next(v for v in case.inputs if v is not None))
    out_types = case.out_types or [first] * case.outputs
    outs = [f"out{i}" for i in range(case.outputs)]
    attrs = dict(case.attrs)
    if widen_f16 and case.op == "Cast" and attrs.get("to") == F16:
        attrs["to"] = F32
    node = helper.make_node(case.op, names, outs, name=f"{case.op.lower()}_node", **attrs)
    graph = helper.make_graph(
        [node], case.id, graph_inputs, [helper.make_tensor_value_info(o, t(k), None) for o, k in zip(outs, out_types)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 10 if case.opset >= 21 else 8
    return model


def _feeds(case: Case, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {f"in{i}": (v.make(rng) if isinstance(v, R) else v) for i, v in enumerate(case.inputs) if v is not None}


def _reference(case: Case, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    if case.reference == "onnx":
        from onnx.reference import ReferenceEvaluator

        return list(ReferenceEvaluator(_model(case)).run(None, feeds))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(_model(case).SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return ops.run(sess, feeds)
    except Exception:
        if not any(v.dtype == np.float16 for v in feeds.values()):
            raise
    # ORT's CPU EP has no float16 kernel for this op: run it in float32, round once to float16.
    sess = ort.InferenceSession(
        _model(case, widen_f16=True).SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    wide = {k: (v.astype(np.float32) if v.dtype == np.float16 else v) for k, v in feeds.items()}
    outs = ops.run(sess, wide)
    types = case.out_types or [_type_of(next(v for v in case.inputs if v is not None))] * case.outputs
    return [o.astype(np.float16) if k == F16 else o for o, k in zip(outs, types)]


def _has_gpu() -> bool:
    try:
        fp8ort.register()
        names = set(fp8ort.get_ep_names())
        return any(d.ep_name in names and d.device.type == ort.OrtHardwareDeviceType.GPU for d in ort.get_ep_devices())
    except Exception:
        return False


S = (2, 3, 4)  # a small default shape
# float32 -> E4M3FN edges: ties, the largest finite, values rounding past it (464, 480), Inf, NaN, subnormals
FP8_EDGES = np.array(
    [
        448,
        450,
        464,
        465,
        480,
        500,
        -464,
        -480,
        np.inf,
        -np.inf,
        np.nan,
        1e30,
        2.0**-9,
        2.0**-10,
        3 * 2.0**-10,
        0.0,
        -0.0,
        1.0625,
        1.1875,
    ],
    np.float32,
)
IMG = (2, 3, 9, 11)

CASES: list[Case] = [
    # ---- ResNet-50: MaxPool, GlobalAveragePool, Flatten, Reshape, Transpose, Add, Relu ----
    Case("relu", "Relu", [R(IMG)]),
    Case("relu_f16_op14", "Relu", [R(IMG, F16)], opset=14),
    Case("relu_empty", "Relu", [R((0, 3))]),
    Case("add_same", "Add", [R(S), R(S)]),
    Case("add_bcast_row", "Add", [R(S), R((4,))]),
    Case("add_bcast_both", "Add", [R((2, 1, 4)), R((3, 1))], opset=14),
    Case("add_scalar", "Add", [R(S), R(())]),
    Case("add_f16", "Add", [R(S, F16), R((3, 1), F16)]),
    Case("add_i64", "Add", [R(S, I64, -100, 100), R((4,), I64, -100, 100)]),
    Case("add_i32", "Add", [R(S, I32, -100, 100), R((1, 4), I32, -100, 100)]),
    Case("add_empty", "Add", [R((0, 4)), R((4,))]),
    Case("add_bad_bcast", "Add", [R((2, 3)), R((4,))], error=r"cannot be broadcast"),
    Case(
        "maxpool_resnet",
        "MaxPool",
        [R((1, 4, 12, 12))],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    ),
    Case("maxpool_ceil", "MaxPool", [R(IMG)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    Case("maxpool_dilated", "MaxPool", [R(IMG)], {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    Case(
        "maxpool_same_upper", "MaxPool", [R(IMG)], {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}
    ),
    Case("maxpool_1d", "MaxPool", [R((2, 3, 10))], {"kernel_shape": [3], "strides": [2]}),
    Case("maxpool_f16", "MaxPool", [R(IMG, F16)], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    Case(
        "maxpool_indices",
        "MaxPool",
        [R(IMG)],
        {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]},
        outputs=2,
        out_types=[F32, I64],
        cpu_only="MaxPool's Indices output has no GPU kernel",
    ),
    Case("maxpool_empty_batch", "MaxPool", [R((0, 3, 8, 8))], {"kernel_shape": [2, 2]}),
    Case("gap", "GlobalAveragePool", [R(IMG)]),
    Case("gap_f16", "GlobalAveragePool", [R(IMG, F16)], atol=2e-3, rtol=2e-3),
    Case("gap_1d", "GlobalAveragePool", [R((2, 5, 7))]),
    Case("flatten_axis1", "Flatten", [R(IMG)]),
    Case("flatten_axis0", "Flatten", [R(IMG)], {"axis": 0}),
    Case("flatten_neg", "Flatten", [R(IMG)], {"axis": -1}, opset=21),
    Case("flatten_rank", "Flatten", [R(IMG)], {"axis": 4}),
    Case("reshape_infer", "Reshape", [R(IMG), ints(2, -1)], opset=13),
    Case("reshape_zero_copy", "Reshape", [R(IMG), ints(0, 0, -1)], opset=14),
    Case("reshape_allowzero", "Reshape", [R((0, 3)), ints(3, 0)], {"allowzero": 1}, opset=14),
    Case("reshape_op21_i64", "Reshape", [R(S, I64, 0, 9), ints(4, 6)], opset=21),
    Case("reshape_bad", "Reshape", [R(S), ints(5, 5)], error=r"element counts must match"),
    Case("transpose_default", "Transpose", [R(S)]),
    Case("transpose_nhwc", "Transpose", [R(IMG)], {"perm": [0, 2, 3, 1]}),
    Case("transpose_nchw", "Transpose", [R(IMG)], {"perm": [0, 3, 1, 2]}, opset=21),
    Case("transpose_i64", "Transpose", [R(S, I64, -5, 5)], {"perm": [1, 0, 2]}),
    Case("transpose_bool", "Transpose", [R(S, BOOL)], {"perm": [2, 0, 1]}),
    Case("transpose_f16", "Transpose", [R(S, F16)], {"perm": [2, 1, 0]}),
    Case("transpose_fp8", "Transpose", [R(IMG, E4M3)], {"perm": [0, 2, 3, 1]}, opset=21),
    Case("transpose_empty", "Transpose", [R((2, 0, 3))], {"perm": [2, 0, 1]}),
    # ---- MobileNetV3 / EfficientNet ----
    Case("clip_both", "Clip", [R(S), np.array(-1.0, np.float32), np.array(1.5, np.float32)]),
    Case("clip_max_only", "Clip", [R(S), None, np.array(0.5, np.float32)]),
    Case("clip_none", "Clip", [R(S)]),
    Case("clip_f16", "Clip", [R(S, F16), np.array(0, np.float16), np.array(6, np.float16)]),
    Case("sigmoid", "Sigmoid", [R(IMG)], rtol=1e-5, atol=1e-6),
    Case("sigmoid_f16", "Sigmoid", [R(IMG, F16)], atol=1e-3, rtol=1e-3),
    Case("hardsigmoid", "HardSigmoid", [R(IMG)], {"alpha": 0.25, "beta": 0.4}),
    Case("hardsigmoid_default", "HardSigmoid", [R(IMG, F16)], atol=1e-3),
    Case("hardswish", "HardSwish", [R(IMG, lo=-5, hi=5)], opset=14),
    Case("mul_bcast", "Mul", [R(IMG), R((3, 1, 1))]),
    Case("mul_i64", "Mul", [R(S, I64, -50, 50), R((), I64, -50, 50)]),
    Case("sub_f16", "Sub", [R(S, F16), R((4,), F16)], opset=14),
    Case("div", "Div", [R(S), R(S, lo=0.5, hi=2)], rtol=1e-6),
    Case("div_i64_trunc", "Div", [R(S, I64, -100, 100), ints(3, -7, 5, 2)]),
    Case(
        "div_i64_by_zero",
        "Div",
        [R(S, I64, 1, 5), ints(1, 0, 2, 3)],
        error=r"division by zero",
        gpu_value=lambda f: np.where([1, 0, 2, 3] == np.zeros(4), 0, f["in0"] // np.maximum([1, 0, 2, 3], 1)),
    ),
    Case("reducemean_13", "ReduceMean", [R(IMG)], {"axes": [2, 3]}, opset=13),
    Case("reducemean_13_nokeep", "ReduceMean", [R(IMG)], {"axes": [-1], "keepdims": 0}, opset=13),
    Case("reducemean_13_all", "ReduceMean", [R(S)], opset=17),
    Case("reducemean_18", "ReduceMean", [R(IMG), ints(-2, -1)], opset=18),
    Case("reducemean_18_noaxes", "ReduceMean", [R(S)], {"keepdims": 0}, opset=18),
    Case("reducemean_18_noop", "ReduceMean", [R(S)], {"noop_with_empty_axes": 1}, opset=18),
    # NHWC pooling (the quantizer's channels-last GlobalAveragePool): many values per output, outputs contiguous
    Case("reducemean_nhwc_pool", "ReduceMean", [R((2, 13, 11, 70)), ints(1, 2)], opset=18, atol=1e-5),
    Case("reducemean_nhwc_pool_f16", "ReduceMean", [R((1, 20, 20, 33), F16), ints(1, 2)], opset=18, atol=2e-3),
    Case("reducemean_f16", "ReduceMean", [R(IMG, F16), ints(1)], opset=21, atol=2e-3, rtol=2e-3),
    Case("reducemean_bad_axis", "ReduceMean", [R(S), ints(3)], opset=18, error=r"out of range"),
    Case("avgpool", "AveragePool", [R(IMG)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    Case(
        "avgpool_incl_pad",
        "AveragePool",
        [R(IMG)],
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    ),
    Case("avgpool_ceil", "AveragePool", [R(IMG)], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    Case("avgpool_19_dilated", "AveragePool", [R(IMG)], {"kernel_shape": [2, 2], "dilations": [2, 1]}, opset=19),
    Case("avgpool_f16", "AveragePool", [R(IMG, F16)], {"kernel_shape": [2, 2]}, atol=2e-3, rtol=2e-3),
    Case("conv_3x3", "Conv", [R((2, 4, 9, 9)), R((6, 4, 3, 3)), R((6,))], {"pads": [1, 1, 1, 1]}, atol=1e-4),
    Case("conv_stride2_nobias", "Conv", [R((1, 3, 12, 11)), R((5, 3, 3, 3))], {"strides": [2, 2]}, atol=1e-4),
    Case(
        "conv_grouped",
        "Conv",
        [R((1, 6, 8, 8)), R((4, 3, 3, 3)), R((4,))],
        {"group": 2, "pads": [1, 0, 1, 2]},
        atol=1e-4,
    ),
    Case(
        "conv_depthwise",
        "Conv",
        [R((2, 8, 10, 10)), R((8, 1, 5, 5)), R((8,))],
        {"group": 8, "pads": [2, 2, 2, 2], "strides": [2, 2]},
        atol=1e-4,
    ),
    Case("conv_dilated", "Conv", [R((1, 3, 11, 11)), R((2, 3, 3, 3))], {"dilations": [2, 2]}, atol=1e-4),
    Case("conv_1x1", "Conv", [R((2, 16, 5, 5)), R((8, 16, 1, 1))], atol=1e-4),
    Case(
        "conv_same_upper",
        "Conv",
        [R((1, 2, 7, 8)), R((3, 2, 3, 3))],
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        atol=1e-4,
    ),
    Case("conv_1d", "Conv", [R((2, 3, 15)), R((4, 3, 3))], {"pads": [1, 1], "strides": [2]}, atol=1e-4),
    Case("conv_f16", "Conv", [R((1, 4, 6, 6), F16), R((4, 4, 3, 3), F16)], atol=2e-2, rtol=5e-3),
    Case("conv_bad_group", "Conv", [R((1, 6, 8, 8)), R((4, 4, 3, 3))], {"group": 2}, error=r"group"),
    Case("concat_axis1", "Concat", [R(IMG), R((2, 5, 9, 11))], {"axis": 1}),
    Case("concat_neg_three", "Concat", [R(S), R((2, 3, 1)), R((2, 3, 2))], {"axis": -1}),
    Case("concat_i64", "Concat", [R((2,), I64, 0, 9), R((1,), I64, 0, 9)], {"axis": 0}),
    Case("concat_empty_part", "Concat", [R((0, 4)), R((2, 4))], {"axis": 0}),
    Case("reshape_fp8", "Reshape", [R((2, 3, 4), E4M3), ints(4, -1)], opset=21),
    Case("concat_bad", "Concat", [R((2, 3)), R((3, 3))], {"axis": 1}, error=r"does not match"),
    # ---- BERT ----
    Case("gather_embed", "Gather", [R((10, 6)), R((2, 5), I64, 0, 10)]),
    Case("gather_axis1_neg", "Gather", [R(S), R((3,), I64, -4, 4)], {"axis": -1}),
    Case("gather_i32_idx", "Gather", [R(S, I64, 0, 9), R((2,), I32, 0, 3)], {"axis": 1}),
    Case("gather_scalar_idx", "Gather", [R((5,), I64, 0, 9), np.array(2, np.int64)]),
    Case(
        "gather_oob",
        "Gather",
        [R((4, 3)), ints(1, 4)],
        error=r"index 4 is out of range",
        gpu_value=lambda f: np.stack([f["in0"][1], np.zeros(3, np.float32)]),
    ),
    Case("layernorm", "LayerNormalization", [R((2, 5, 8)), R((8,)), R((8,))], atol=1e-5, rtol=1e-4),
    Case(
        "layernorm_axis1_stats",
        "LayerNormalization",
        [R((2, 3, 4)), R((3, 4)), None],
        {"axis": 1, "epsilon": 1e-3},
        outputs=3,
        out_types=[F32, F32, F32],
        atol=1e-5,
        rtol=1e-4,
    ),
    # rows of 128..1,024 float32 values with cols % 4 == 0: the GPU's warp-per-row kernel (BERT's 768; 132 leaves
    # lanes with one float4 fewer; stats outputs too)
    Case("layernorm_rows768", "LayerNormalization", [R((3, 7, 768)), R((768,)), R((768,))], atol=1e-5, rtol=1e-4),
    Case(
        "layernorm_rows132_stats",
        "LayerNormalization",
        [R((9, 132)), R((132,)), None],
        {"epsilon": 1e-3},
        outputs=3,
        out_types=[F32, F32, F32],
        atol=1e-5,
        rtol=1e-4,
    ),
    Case("layernorm_f16", "LayerNormalization", [R((4, 16), F16), R((16,), F16), R((16,), F16)], atol=1e-2, rtol=1e-2),
    Case("matmul_2d", "MatMul", [R((5, 7)), R((7, 3))], atol=1e-4),
    Case("matmul_batched", "MatMul", [R((2, 4, 5, 7)), R((2, 4, 7, 6))], atol=1e-4),
    Case("matmul_bcast", "MatMul", [R((2, 1, 3, 4)), R((5, 4, 6))], atol=1e-4),
    Case("matmul_vec_mat", "MatMul", [R((4,)), R((2, 4, 3))], atol=1e-4),
    Case("matmul_mat_vec", "MatMul", [R((3, 5, 4)), R((4,))], atol=1e-4),
    Case("matmul_f16", "MatMul", [R((8, 16), F16), R((16, 8), F16)], atol=2e-2, rtol=5e-3),
    # Above the GPU's cuBLASLt threshold (2^22 multiply-adds; the SIMT kernel where the route declines):
    # BERT-base attention at batch 2 (QK^T, PV), broadcast batches, float16.
    Case("matmul_attn_qk", "MatMul", [R((2, 12, 128, 64), lo=-1, hi=1), R((2, 12, 64, 128), lo=-1, hi=1)], atol=1e-4),
    Case("matmul_attn_pv", "MatMul", [R((2, 12, 128, 128), lo=0, hi=1), R((2, 12, 128, 64), lo=-1, hi=1)], atol=1e-4),
    Case("matmul_bcast_b_2d", "MatMul", [R((3, 4, 64, 64), lo=-1, hi=1), R((64, 128), lo=-1, hi=1)], atol=1e-4),
    Case("matmul_bcast_a_2d", "MatMul", [R((64, 64), lo=-1, hi=1), R((3, 4, 64, 128), lo=-1, hi=1)], atol=1e-4),
    # batch axes that do not merge into one stride (A repeats over the outer axis): the SIMT kernel
    Case("matmul_bcast_unmerged", "MatMul", [R((4, 64, 64), lo=-1, hi=1), R((3, 4, 64, 128), lo=-1, hi=1)], atol=1e-4),
    Case(
        "matmul_attn_f16",
        "MatMul",
        [R((2, 12, 128, 64), F16, lo=-1, hi=1), R((2, 12, 64, 128), F16, lo=-1, hi=1)],
        atol=2e-2,
        rtol=5e-3,
    ),
    Case("matmul_bad_k", "MatMul", [R((3, 4)), R((5, 2))], error=r"inner dimension"),
    Case("softmax", "Softmax", [R((2, 3, 10))], atol=1e-6),
    Case("softmax_axis1", "Softmax", [R((2, 5, 3))], {"axis": 1}, opset=13, atol=1e-6),
    Case("softmax_f16", "Softmax", [R((4, 12), F16)], atol=1e-3),
    Case("erf", "Erf", [R(S)], atol=1e-6),
    Case("tanh_f16", "Tanh", [R(S, F16)], atol=1e-3),
    Case("pow_sq", "Pow", [R(S), np.array(2.0, np.float32)], opset=15),
    Case("pow_bcast", "Pow", [R(S, lo=0.1, hi=3), R((4,), lo=-2, hi=2)], opset=13, rtol=1e-5),
    Case("sqrt", "Sqrt", [R(S, lo=0, hi=9)]),
    Case("where", "Where", [R(S, BOOL), R(S), R((4,))], out_types=[F32]),
    Case("where_i64", "Where", [R((3, 1), BOOL), R((), I64, 0, 9), R((1, 4), I64, 0, 9)], opset=16, out_types=[I64]),
    Case("cast_f32_f16", "Cast", [R(S)], {"to": F16}, out_types=[F16]),
    Case("cast_f16_f32", "Cast", [R(S, F16)], {"to": F32}, opset=19, out_types=[F32]),
    Case("cast_f32_i64", "Cast", [R(S, lo=-50, hi=50)], {"to": I64}, out_types=[I64], opset=13),
    Case("cast_i64_f32", "Cast", [R(S, I64, -1000, 1000)], {"to": F32}, out_types=[F32], opset=21),
    Case("cast_f32_bool", "Cast", [np.array([0.0, 1.5, -2.0, 0.0], np.float32)], {"to": BOOL}, out_types=[BOOL]),
    Case("cast_bool_f32", "Cast", [R(S, BOOL)], {"to": F32}, out_types=[F32]),
    Case("cast_i32_i64", "Cast", [R(S, I32, -9, 9)], {"to": I64}, out_types=[I64]),
    Case("cast_f32_fp8", "Cast", [R(S, lo=-500, hi=500)], {"to": E4M3}, out_types=[E4M3], opset=19),
    Case(
        "cast_f32_fp8_nosat",
        "Cast",
        [R(S, lo=-500, hi=500)],
        {"to": E4M3, "saturate": 0},
        out_types=[E4M3],
        opset=21,
        reference="onnx",
    ),
    Case("cast_fp8_edges_sat", "Cast", [FP8_EDGES], {"to": E4M3}, out_types=[E4M3], opset=19, reference="onnx"),
    Case(
        "cast_fp8_edges_nosat",
        "Cast",
        [FP8_EDGES],
        {"to": E4M3, "saturate": 0},
        out_types=[E4M3],
        opset=21,
        reference="onnx",
    ),
    Case("unsqueeze", "Unsqueeze", [R(S), ints(0)]),
    Case("unsqueeze_neg_multi", "Unsqueeze", [R(S), ints(-1, 1)], opset=21),
    Case("unsqueeze_dup", "Unsqueeze", [R(S), ints(1, 1)], error=r"twice"),
    Case("squeeze_axes", "Squeeze", [R((2, 1, 4, 1)), ints(-1)]),
    Case("squeeze_all", "Squeeze", [R((1, 3, 1, 2), I64, 0, 5)], opset=21),
    Case("squeeze_not_one", "Squeeze", [R((2, 3)), ints(0)], error=r"not 1"),
    Case("shape", "Shape", [R(IMG)], opset=13, out_types=[I64]),
    Case("shape_start_end", "Shape", [R(IMG)], {"start": 1, "end": -1}, opset=15, out_types=[I64]),
    Case("shape_neg_start", "Shape", [R(IMG, I64, 0, 3)], {"start": -2}, opset=21, out_types=[I64]),
    Case("slice_basic", "Slice", [R((5, 6)), ints(1, 0), ints(4, 6)]),
    Case("slice_axes_steps", "Slice", [R((5, 6, 4)), ints(-1, 0), ints(BIG, 5), ints(1, -1), ints(2, 2)]),
    Case("slice_reverse", "Slice", [R((7,)), ints(-1), ints(-BIG), ints(0), ints(-1)]),
    Case(
        "slice_clamp_i32",
        "Slice",
        [R((4, 5)), np.array([-10], np.int32), np.array([100], np.int32), np.array([1], np.int32)],
    ),
    Case("slice_empty", "Slice", [R((4, 5), I64, 0, 9), ints(3), ints(1), ints(0)]),
    Case("slice_step0", "Slice", [R((4, 5)), ints(0), ints(2), ints(0), ints(0)], error=r"steps must not be 0"),
    Case("expand", "Expand", [R((3, 1)), ints(2, 3, 4)]),
    Case("expand_ones", "Expand", [R((2, 3, 4)), ints(1, 1)]),
    Case("expand_i64", "Expand", [R((1, 4), I64, 0, 9), ints(3, 1)]),
    Case("expand_bad", "Expand", [R((3, 2)), ints(4, 5)], error=r"cannot be broadcast"),
    Case("cos_default", "ConstantOfShape", [ints(2, 3)], out_types=[F32]),
    Case(
        "cos_float",
        "ConstantOfShape",
        [ints(4)],
        {"value": helper.make_tensor("v", F32, [1], [1.5])},
        out_types=[F32],
        opset=20,
    ),
    Case(
        "cos_int64",
        "ConstantOfShape",
        [ints(3, 2)],
        {"value": helper.make_tensor("v", I64, [1], [7])},
        out_types=[I64],
        opset=21,
    ),
    Case("cos_empty", "ConstantOfShape", [ints(0, 3)], out_types=[F32]),
    Case("equal", "Equal", [R(S, I64, 0, 3), R((4,), I64, 0, 3)], out_types=[BOOL], opset=13),
    Case(
        "equal_f32",
        "Equal",
        [np.array([1.0, 2.0, np.nan], np.float32), np.array([1.0, 3.0, np.nan], np.float32)],
        out_types=[BOOL],
        opset=19,
    ),
    Case("equal_bool", "Equal", [R(S, BOOL), R(S, BOOL)], out_types=[BOOL]),
    Case("gemm", "Gemm", [R((4, 5)), R((5, 3)), R((3,))], atol=1e-4),
    Case(
        "gemm_trans_alpha_beta",
        "Gemm",
        [R((5, 4)), R((3, 5)), R((4, 1))],
        {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
        atol=1e-4,
    ),
    Case("gemm_no_c", "Gemm", [R((4, 5)), R((3, 5))], {"transB": 1}, atol=1e-4),
    Case("gemm_f16", "Gemm", [R((4, 8), F16), R((8, 3), F16), R((1,), F16)], atol=2e-2, rtol=5e-3),
    Case(
        "gemm_large_trans_b",
        "Gemm",
        [R((256, 256), lo=-1, hi=1), R((192, 256), lo=-1, hi=1), R((192,), lo=-1, hi=1)],
        {"transB": 1},
        atol=1e-4,
    ),
    Case(
        "gemm_large_trans_alpha_beta",
        "Gemm",
        [R((256, 256), lo=-1, hi=1), R((192, 256), lo=-1, hi=1), R((256, 1), lo=-1, hi=1)],
        {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
        atol=1e-4,
    ),
    Case("gemm_large_no_c", "Gemm", [R((256, 256), lo=-1, hi=1), R((256, 192), lo=-1, hi=1)], atol=1e-4),
    Case(
        "gemm_large_f16",
        "Gemm",
        [R((256, 256), F16, lo=-1, hi=1), R((192, 256), F16, lo=-1, hi=1), R((192,), F16, lo=-1, hi=1)],
        {"transB": 1},
        atol=2e-2,
        rtol=5e-3,
    ),
    Case("gelu", "Gelu", [R(S)], opset=20, atol=1e-6),
    Case("gelu_tanh_f16", "Gelu", [R(S, F16)], {"approximate": "tanh"}, opset=20, atol=1e-3),
    Case("identity", "Identity", [R(S)]),
    Case("identity_i64_op21", "Identity", [R(S, I64, 0, 9)], opset=21),
    # ---- each schema version of opsets 13-21 (ORT matches kernels per schema version) ----
    Case("add_op13", "Add", [R(S), R((3, 1))], opset=13),
    Case("sub_op13", "Sub", [R(S, I64, -9, 9), R((4,), I64, -9, 9)], opset=13),
    Case("mul_op13", "Mul", [R(S, F16), R((), F16)], opset=13),
    Case("div_op13", "Div", [R(S), R((4,), lo=1, hi=2)], opset=13, rtol=1e-6),
    Case("relu_op13", "Relu", [R(S)], opset=13),
    Case("identity_op13", "Identity", [R(S, F16)], opset=13),
    Case("identity_op14", "Identity", [R(S, BOOL)], opset=14),
    Case("identity_op19", "Identity", [R(S, I32, 0, 9)], opset=19),
    Case("reshape_op19", "Reshape", [R(IMG), ints(-1, 11)], opset=19),
    Case("shape_op19", "Shape", [R(S)], {"end": 2}, opset=19, out_types=[I64]),
    Case("where_op15", "Where", [R(S, BOOL), R((4,), F16), R(S, F16)], opset=15, out_types=[F16]),
    # ---- large enough for the kernels' parallel paths (>= 2^16 elements, many rows) ----
    Case("big_add_bcast", "Add", [R((300, 257)), R((257,))]),
    Case("big_where", "Where", [R((2, 150, 257), BOOL), R((150, 1)), R((257,))], out_types=[F32]),
    Case("big_transpose", "Transpose", [R((40, 33, 64))], {"perm": [2, 0, 1]}),
    # broadcasts along rows of a contiguous last dimension (the GPU's 4-wide row kernel): the NHWC
    # squeeze-excitation scale, a per-channel bias, a per-pixel divisor, either operand broadcast, float16
    Case("mul_se_nhwc", "Mul", [R((2, 5, 6, 24)), R((2, 1, 1, 24))]),
    Case("mul_se_nhwc_swapped", "Mul", [R((2, 1, 1, 24)), R((2, 5, 6, 24))]),
    Case("add_channel_bias_f16", "Add", [R((3, 7, 40), F16), R((40,), F16)]),
    Case("div_per_pixel", "Div", [R((2, 4, 4, 16)), R((2, 4, 4, 1), lo=0.5, hi=2.0)]),
    Case("sub_se_odd_channels", "Sub", [R((2, 5, 6, 22)), R((2, 1, 1, 22))]),
    Case("pow_rows", "Pow", [R((2, 3, 32), lo=0.1, hi=2.0), R((1, 3, 32), lo=-2, hi=2)], rtol=1e-5),
    # contiguous runs moved as 16- or 8-byte units (attention head transposes, row slices)
    Case("transpose_heads", "Transpose", [R((2, 9, 4, 64))], {"perm": [0, 2, 1, 3]}),
    Case("transpose_heads_f16", "Transpose", [R((2, 9, 4, 24), F16)], {"perm": [0, 2, 1, 3]}),
    Case("transpose_runs_of_6", "Transpose", [R((3, 5, 7, 6))], {"perm": [2, 0, 1, 3]}),
    Case("slice_rows", "Slice", [R((6, 10, 32)), ints(1, 2), ints(5, 9), ints(0, 1)]),
    # one short edge (an RGB image between layouts): the GPU's one-thread-per-line transpose
    Case("transpose_rgb_to_nhwc", "Transpose", [R((3, 3, 50, 43))], {"perm": [0, 2, 3, 1]}),
    Case("transpose_rgb_to_nchw", "Transpose", [R((3, 50, 43, 3))], {"perm": [0, 3, 1, 2]}),
    Case("transpose_c8_to_nhwc_f16", "Transpose", [R((2, 8, 33, 7), F16)], {"perm": [0, 2, 3, 1]}),
    Case("transpose_c5_to_nchw_fp8", "Transpose", [R((2, 9, 31, 5), E4M3)], {"perm": [0, 3, 1, 2]}, opset=21),
    Case("big_expand_i64", "Expand", [R((1, 257), I64, 0, 99), ints(300, 1)]),
    Case("big_slice", "Slice", [R((300, 500)), ints(1, -1), ints(299, 0), ints(0, 1), ints(1, -2)]),
    Case("big_relu_f16", "Relu", [R((70000,), F16)]),
    # ---- more bad inputs: clear errors, no crash ----
    Case("maxpool_window_too_big", "MaxPool", [R((1, 2, 2, 2))], {"kernel_shape": [3, 3]}, error=r"larger than"),
    Case("layernorm_bad_scale", "LayerNormalization", [R((2, 4)), R((3,))], error=r"broadcast"),
    Case("gemm_bad_k", "Gemm", [R((2, 3)), R((4, 2))], error=r"do not agree on K"),
    Case("slice_bad_axis", "Slice", [R((4, 5)), ints(0), ints(2), ints(2)], error=r"out of range"),
    Case("where_bad_bcast", "Where", [R((2, 3), BOOL), R((4,)), R((2, 1))], out_types=[F32], error=r"broadcast"),
    Case("conv_bad_bias", "Conv", [R((1, 2, 5, 5)), R((3, 2, 3, 3)), R((2,))], error=r"B \[2\] must be \[3\]"),
    Case("cos_negative_dim", "ConstantOfShape", [ints(2, -1)], out_types=[F32], error=r"negative dimension"),
    Case("reshape_two_minus1", "Reshape", [R(S), ints(-1, -1)], error=r"more than one -1"),
    Case(
        "avgpool_ceil_incl_pad",
        "AveragePool",
        [R(IMG)],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
    ),
    Case(
        "maxpool_3d",
        "MaxPool",
        [R((1, 2, 5, 6, 7))],
        {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 0, 0]},
        cpu_only="the GPU pools are 1-D and 2-D",
    ),
    Case(
        "conv_3d",
        "Conv",
        [R((1, 2, 5, 6, 7)), R((4, 2, 2, 3, 2))],
        {"pads": [1, 0, 1, 0, 1, 1]},
        atol=1e-4,
        cpu_only="the GPU float Conv is 1-D and 2-D",
    ),
    # ---- the attention-mask subgraphs of Hugging Face encoder exports (transformers 5, both exporters) ----
    Case("less_f32", "Less", [R(S), R((4,))], out_types=[BOOL], opset=13),
    Case("greater_i64", "Greater", [R(S, I64, 0, 4), R((3, 1), I64, 0, 4)], out_types=[BOOL], opset=13),
    Case("less_equal_i32", "LessOrEqual", [R(S, I32, 0, 4), R((), I32, 0, 4)], out_types=[BOOL], opset=16),
    Case(
        "greater_equal_i64", "GreaterOrEqual", [R((1, 5), I64, 0, 6), R((5, 1), I64, 0, 6)], out_types=[BOOL], opset=16
    ),
    Case("less_equal_f32_op13", "LessOrEqual", [R(S), R((4,))], out_types=[BOOL], opset=13),
    Case("greater_equal_i32_op13", "GreaterOrEqual", [R(S, I32, 0, 3), R(S, I32, 0, 3)], out_types=[BOOL], opset=13),
    Case("greater_equal_f16", "GreaterOrEqual", [R(S, F16), R((4,), F16)], out_types=[BOOL], opset=18),
    Case("max_i64", "Max", [R(S, I64, -9, 9), R((4,), I64, -9, 9)], opset=13),
    Case("max_f32_three", "Max", [R(S), R((3, 1)), R(())], opset=13),
    Case("max_one", "Max", [R(S)], opset=13),
    Case("min_f16", "Min", [R(S, F16), R((1, 4), F16)], opset=13),
    Case("min_i32", "Min", [R((5,), I32, -9, 9), R((2, 1), I32, -9, 9)], opset=13),
    Case("and_bcast", "And", [R(S, BOOL), R((4,), BOOL)], opset=13),
    Case("or", "Or", [R(S, BOOL), R(S, BOOL)], opset=13),
    Case("xor", "Xor", [R((3, 1), BOOL), R((1, 4), BOOL)], opset=13),
    Case("not", "Not", [R(S, BOOL)], opset=13),
    Case("isnan", "IsNaN", [np.array([1.0, np.nan, -np.inf, 0.0, np.nan], np.float32)], out_types=[BOOL], opset=13),
    Case("isnan_f16_op20", "IsNaN", [np.array([np.nan, 2.0, np.inf], np.float16)], out_types=[BOOL], opset=20),
    Case("range_i64", "Range", [np.array(2, np.int64), np.array(17, np.int64), np.array(3, np.int64)], opset=13),
    Case("range_i32_down", "Range", [np.array(5, np.int32), np.array(-4, np.int32), np.array(-2, np.int32)]),
    Case("range_f32", "Range", [np.array(0.5, np.float32), np.array(3.0, np.float32), np.array(0.25, np.float32)]),
    Case("range_empty", "Range", [np.array(4, np.int64), np.array(1, np.int64), np.array(1, np.int64)]),
    Case(
        "range_zero_delta",
        "Range",
        [np.array(0, np.int64), np.array(4, np.int64), np.array(0, np.int64)],
        error=r"delta must not be 0",
    ),
    Case("gather_elements_axis1", "GatherElements", [R((3, 5)), R((3, 4), I64, -5, 5)], {"axis": 1}, opset=13),
    Case("gather_elements_i32_axis0", "GatherElements", [R((4, 2, 3), I64, 0, 99), R((2, 2, 3), I32, 0, 4)]),
    Case(
        "gather_elements_oob",
        "GatherElements",
        [R((3, 3)), ints(0, 3, 1).reshape(1, 3)],
        error=r"index 3 is out of range",
        gpu_value=lambda f: np.where(np.arange(3) == 1, 0.0, f["in0"][[0, 0, 1], [0, 1, 2]]).astype(np.float32)[None],
    ),
    Case("gather_nd", "GatherND", [R((4, 3, 2)), ints(1, 2, 3, 0, 0, 1).reshape(3, 2)], opset=13),
    Case(
        "gather_nd_batch_bool",
        "GatherND",
        [R((2, 3, 4), BOOL), ints(2, 0, 1, 1).reshape(2, 2, 1)],
        {"batch_dims": 1},
        opset=13,
    ),
    Case("gather_nd_bad_k", "GatherND", [R((4, 3)), ints(1, 2, 0).reshape(1, 3)], error=r"last dimension of indices"),
    Case("where_bool", "Where", [R(S, BOOL), R((4,), BOOL), R(S, BOOL)], opset=16, out_types=[BOOL], reference="onnx"),
    Case("where_i32", "Where", [R((3, 1), BOOL), R((1, 4), I32, -5, 5), R((), I32, -5, 5)], opset=16, out_types=[I32]),
    Case("cast_i64_bool", "Cast", [R(S, I64, -2, 3)], {"to": BOOL}, out_types=[BOOL], opset=13),
    # ---- timm ViT/DeiT (qkv.unbind: Split + Squeeze), GPT-2 (c_attn(...).split) ----
    Case("split_unbind", "Split", [R((3, 2, 4, 5))], {"axis": 0}, outputs=3, opset=13),
    Case("split_uneven_sizes", "Split", [R((2, 7, 3)), ints(2, 4, 1)], {"axis": 1}, outputs=3, opset=13),
    Case("split_neg_axis_i64", "Split", [R((4, 6), I64, -9, 9), ints(1, 5)], {"axis": -1}, outputs=2, opset=18),
    Case("split_zero_part_f16", "Split", [R((5, 3), F16), ints(0, 5)], outputs=2, opset=13),
    Case("split_num_outputs", "Split", [R((2, 7))], {"axis": -1, "num_outputs": 3}, outputs=3, opset=18),
    Case("split_num_outputs_even", "Split", [R((2, 9, 6))], {"axis": 2, "num_outputs": 3}, outputs=3, opset=21),
    Case("split_bad_sizes", "Split", [R((4, 3)), ints(1, 2)], outputs=2, error=r"add up to 3"),
    Case("split_uneven_equal", "Split", [R((5, 2))], outputs=2, error=r"does not split into 2 equal parts"),
    # ---- Swin-T window padding, tf_efficientnet Conv2dSame (pads computed at run time) ----
    Case("pad_constant", "Pad", [R(IMG), ints(0, 0, 1, 2, 0, 0, 3, 1), np.array(1.5, np.float32)], opset=13),
    Case("pad_default_value", "Pad", [R(S), ints(1, 0, 0, 0, 2, 1)], opset=18),
    Case("pad_reflect", "Pad", [R((2, 3, 5, 6)), ints(0, 0, 2, 3, 0, 0, 4, 2)], {"mode": "reflect"}, opset=18),
    Case("pad_reflect_crop", "Pad", [R((2, 6, 7)), ints(0, -1, 3, 0, 2, -2)], {"mode": "reflect"}, opset=13),
    Case("pad_edge", "Pad", [R(IMG), ints(0, 0, 3, 1, 0, 0, 2, 5)], {"mode": "edge"}, opset=19),
    Case("pad_edge_f16", "Pad", [R((1, 2, 4, 3), F16), ints(0, 0, 2, 2, 0, 0, 1, 4)], {"mode": "edge"}, opset=13),
    # pads past the axis wrap more than once: onnx's reference (onnxruntime 1.24's CPU EP wraps those wrongly)
    Case("pad_wrap", "Pad", [R((2, 3, 4)), ints(0, 1, 5, 0, 2, 2)], {"mode": "wrap"}, opset=19, reference="onnx"),
    Case("pad_crop", "Pad", [R(IMG), ints(0, 0, -2, 1, 0, 0, 1, -3)], opset=21),
    Case("pad_axes", "Pad", [R(IMG), ints(1, 2, 0, 1), np.array(0.5, np.float32), ints(-1, 2)], opset=18),
    Case("pad_i64", "Pad", [R(S, I64, 0, 9), ints(0, 1, 1, 0, 0, 0), np.array(7, np.int64)], opset=21),
    Case("pad_bool_reflect", "Pad", [R((3, 4), BOOL), ints(1, 2, 1, 3)], {"mode": "reflect"}, opset=21),
    Case("pad_empty_axis", "Pad", [R((2, 0, 3)), ints(0, 1, 0, 0, 2, 1)], opset=18),
    # Swin's window padding of channels-last features (F.pad(x, (0, 0, 0, pad_r, 0, pad_b))), large enough for the
    # kernels' parallel paths
    Case("pad_swin_nhwc", "Pad", [R((2, 13, 13, 96)), ints(0, 0, 0, 0, 0, 1, 1, 0), np.array(0.0, np.float32)]),
    Case("pad_reflect_too_far", "Pad", [R((2, 3)), ints(0, 3, 0, 0)], {"mode": "reflect"}, error=r"smaller than"),
    Case("pad_bad_pads", "Pad", [R(S), ints(1, 1)], opset=13, error=r"pads has 2 values"),
    Case("ceil", "Ceil", [np.array([-1.5, -0.5, -0.0, 0.0, 0.4, 1.0, 2.5, np.nan, np.inf, -np.inf], np.float32)]),
    Case("ceil_random", "Ceil", [R(IMG, lo=-5, hi=5)], opset=13),
    Case("floor", "Floor", [R(IMG, lo=-5, hi=5)]),
    Case("floor_f16", "Floor", [R(S, F16, lo=-5, hi=5)], opset=13),
    # ---- DenseNet-121's pre-activation BatchNormalization (inference form) ----
    Case("batchnorm_9", "BatchNormalization", [R(IMG), R((3,)), R((3,)), R((3,)), R((3,), lo=0.1, hi=2)], opset=13),
    Case(
        "batchnorm_14_1d",
        "BatchNormalization",
        [R((2, 4, 7)), R((4,)), R((4,)), R((4,)), R((4,), lo=0.1, hi=2)],
        {"epsilon": 1e-3},
        opset=14,
    ),
    Case(
        "batchnorm_15",
        "BatchNormalization",
        [R((2, 16, 5, 5)), R((16,)), R((16,)), R((16,)), R((16,), lo=0.1, hi=2)],
        {"epsilon": 1e-5, "momentum": 0.9},
        opset=15,
        atol=1e-5,
        rtol=1e-5,
    ),
    Case(
        "batchnorm_f16_mixed",
        "BatchNormalization",
        [R((2, 3, 4, 4), F16), R((3,)), R((3,)), R((3,), F16), R((3,), F16, lo=0.1, hi=2)],
        opset=15,
        atol=1e-2,
        rtol=1e-2,
    ),
    Case(
        "batchnorm_densenet",
        "BatchNormalization",
        [R((2, 128, 14, 14)), R((128,)), R((128,)), R((128,)), R((128,), lo=0.1, hi=2)],
        opset=15,
    ),
    Case("batchnorm_rank2", "BatchNormalization", [R((6, 5)), R((5,)), R((5,)), R((5,)), R((5,), lo=0.5, hi=1)]),
    Case(
        "batchnorm_bad_channels",
        "BatchNormalization",
        [R(IMG), R((4,)), R((3,)), R((3,)), R((3,))],
        opset=15,
        error=r"scale has shape \[4\]",
    ),
    # ---- RoBERTa position ids (cumsum of the padding mask) ----
    Case("cumsum_mask_i64", "CumSum", [R((2, 9), I64, 0, 2), np.array(1, np.int64)], opset=13),
    Case("cumsum_i32_axis0", "CumSum", [R(S, I32, -5, 5), np.array(0, np.int32)], opset=14),
    Case(
        "cumsum_exclusive_reverse",
        "CumSum",
        [R((3, 4, 5)), np.array(-2, np.int64)],
        {"exclusive": 1, "reverse": 1},
        opset=14,
    ),
    Case("cumsum_exclusive", "CumSum", [R((5, 3)), ints(0)], {"exclusive": 1}, opset=13),
    Case("cumsum_reverse_i64", "CumSum", [R((2, 6), I64, -9, 9), np.array(-1, np.int64)], {"reverse": 1}),
    Case("cumsum_bad_axis", "CumSum", [R(S), np.array(3, np.int64)], error=r"out of range"),
    # ---- Swin's attention-mask construction ----
    Case("mod_i64", "Mod", [R(S, I64, -20, 20), ints(3, -4, 5, -7)], opset=13),
    Case("mod_i64_scalar", "Mod", [R((2, 5), I64, 0, 50), np.array(7, np.int64)]),
    Case("mod_i32_fmod", "Mod", [R(S, I32, -20, 20), np.array([3, -4, 5, -7], np.int32)], {"fmod": 1}),
    Case("mod_f32_fmod", "Mod", [R(S, lo=-10, hi=10), R((4,), lo=0.5, hi=3)], {"fmod": 1}, opset=13),
    Case("mod_f16_fmod", "Mod", [R(S, F16, lo=-10, hi=10), R((3, 1), F16, lo=0.5, hi=3)], {"fmod": 1}, atol=1e-2),
    Case("mod_float_no_fmod", "Mod", [R(S), R((4,), lo=1, hi=2)], error=r"fmod = 0 is defined for integers only"),
    Case(
        "mod_by_zero",
        "Mod",
        [R(S, I64, 1, 9), ints(2, 0, 3, 5)],
        error=r"modulo by zero",
        gpu_value=lambda f: np.where(np.array([2, 0, 3, 5]) == 0, 0, f["in0"] % np.maximum([2, 0, 3, 5], 1)),
    ),
    Case(
        "scatternd_rows",
        "ScatterND",
        [R((5, 4)), ints(3, 0).reshape(2, 1), R((2, 4))],
        opset=13,
    ),
    Case(
        "scatternd_elements_neg",
        "ScatterND",
        [R((2, 3, 4)), ints(0, 1, 2, 1, 2, 3, 1, 0, -1).reshape(3, 3), R((3,))],
        opset=13,
    ),
    Case(
        "scatternd_i64_op16",
        "ScatterND",
        [R((4, 3, 2), I64, 0, 99), ints(1, 2, 0, 1).reshape(2, 2), R((2, 2), I64, 0, 99)],
        {"reduction": "none"},
        opset=16,
    ),
    Case(
        "scatternd_f16_op18",
        "ScatterND",
        [R((3, 6), F16), ints(2, 0).reshape(2, 1, 1), R((2, 1, 6), F16)],
        opset=18,
    ),
    Case(
        "scatternd_oob",
        "ScatterND",
        [R((4, 3)), ints(1, 4).reshape(2, 1), R((2, 3))],
        opset=13,
        error=r"index 4 is out of range",
        gpu_value=lambda f: np.concatenate([f["in0"][:1], f["in2"][:1], f["in0"][2:]]),
    ),
    Case(
        "scatternd_bad_updates",
        "ScatterND",
        [R((4, 3)), ints(1, 2).reshape(2, 1), R((2, 2))],
        opset=13,
        error=r"updates has shape \[2, 2\]",
    ),
]


OPSETS = range(13, 22)


def _since(op: str, opset: int) -> int | None:
    try:
        return onnx.defs.get_schema(op, max_inclusive_version=opset, domain="").since_version
    except onnx.defs.SchemaError:
        return None


def _opset_variants() -> tuple[list[tuple[Case, int]], set[tuple[str, int]]]:
    """(case, opset) for every opset 13-21 that resolves the case's op to the same schema as the case's own opset,
    and the (op, schema version) pairs of opsets 13-21 that no case reaches."""
    variants, reached = [], set()
    for case in CASES:
        if case.error is not None:
            continue
        own = _since(case.op, case.opset)
        for v in OPSETS:
            if _since(case.op, v) == own:
                variants.append((case, v))
                reached.add((case.op, own))
    wanted = {(c.op, _since(c.op, v)) for c in CASES for v in OPSETS if _since(c.op, v) is not None}
    return variants, wanted - reached


_VARIANTS, _OPSET_GAPS = _opset_variants()


@pytest.mark.parametrize(("case", "opset"), _VARIANTS, ids=[f"{c.id}-op{v}" for c, v in _VARIANTS])
def test_every_opset_runs_on_the_ep(case: Case, opset: int) -> None:
    """Each schema version of opsets 13-21 is claimed by the EP's CPU device (ORT matches an open-ended kernel
    only to its exact since_version)."""
    if not hasattr(fp8ort, "InferenceSession"):
        pytest.skip("fp8ort.InferenceSession is not in this build (branch ep)")
    variant = Case(**{**case.__dict__, "opset": opset})
    fp8ort.InferenceSession(_model(variant).SerializeToString(), device="cpu", strict=True)


@pytest.fixture(scope="module")
def has_gpu() -> bool:
    return _has_gpu()


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_op(case: Case, device: str, rng: np.random.Generator, has_gpu: bool) -> None:
    if not hasattr(fp8ort, "InferenceSession"):
        pytest.skip("fp8ort.InferenceSession is not in this build (branch ep)")
    if device == "gpu" and not has_gpu:
        pytest.skip("fp8ort finds no GPU device")
    feeds = _feeds(case, rng)
    if device == "gpu" and case.cpu_only:
        with pytest.raises(RuntimeError, match=rf"no kernel for {case.op}\b"):
            fp8ort.InferenceSession(_model(case).SerializeToString(), device=device, strict=True)
        with pytest.warns(fp8ort.PlacementWarning, match=case.op):
            sess = fp8ort.InferenceSession(_model(case).SerializeToString(), device=device)
    else:
        sess = fp8ort.InferenceSession(_model(case).SerializeToString(), device=device, strict=True)
    if case.error is not None and device == "gpu" and case.gpu_value is not None:
        (got,) = ops.run(sess, feeds)
        want = case.gpu_value(feeds)
        np.testing.assert_array_equal(got, want.astype(got.dtype))
        return
    if case.error is not None:
        with pytest.raises(Exception) as info:
            ops.run(sess, feeds)
        assert re.search(case.error, str(info.value)), str(info.value)
        where = f"{case.op} '{case.op.lower()}_node': "
        assert where in str(info.value), f"the error should name the op and node: {info.value}"
        assert where * 2 not in str(info.value), f"the node is named twice: {info.value}"
        return
    got = ops.run(sess, feeds)
    want = _reference(case, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype.kind in "fV" and g.dtype.itemsize <= 8 and g.dtype not in (np.float32, np.float16, np.float64):
            np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))  # FP8: the same codes
        elif g.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=case.rtol, atol=case.atol)
        else:
            np.testing.assert_array_equal(g, w)


# Attribute values a kernel does not implement: refused when the session creates the kernel, naming the op and value.
REFUSED = [
    Case(
        "scatternd_reduction_add",
        "ScatterND",
        [R((4, 3)), ints(1, 2).reshape(2, 1), R((2, 3))],
        {"reduction": "add"},
        opset=16,
        error=r"reduction 'add' is not implemented",
    ),
    Case(
        "batchnorm_training",
        "BatchNormalization",
        [R(IMG), R((3,)), R((3,)), R((3,)), R((3,), lo=0.1, hi=2)],
        {"training_mode": 1},
        opset=15,
        outputs=3,
        error=r"training_mode = 1 is not implemented",
    ),
]


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_unimplemented_attributes_are_refused_at_kernel_creation(case: Case, device: str, has_gpu: bool) -> None:
    if not hasattr(fp8ort, "InferenceSession"):
        pytest.skip("fp8ort.InferenceSession is not in this build (branch ep)")
    if device == "gpu" and not has_gpu:
        pytest.skip("fp8ort finds no GPU device")
    with pytest.raises(Exception) as info:
        fp8ort.InferenceSession(_model(case).SerializeToString(), device=device, strict=True)
    assert re.search(case.error, str(info.value)), str(info.value)
    assert f"{case.op} '{case.op.lower()}_node'" in str(info.value), str(info.value)


def test_every_registered_op_has_a_case() -> None:
    """The table covers each op type the CPU device registers (listed here: the C++ table is not visible)."""
    registered = {
        "Relu",
        "Sigmoid",
        "HardSigmoid",
        "HardSwish",
        "Erf",
        "Tanh",
        "Sqrt",
        "Gelu",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Equal",
        "Less",
        "Greater",
        "LessOrEqual",
        "GreaterOrEqual",
        "Max",
        "Min",
        "And",
        "Or",
        "Xor",
        "Not",
        "IsNaN",
        "Range",
        "GatherElements",
        "GatherND",
        "Clip",
        "Where",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Identity",
        "Shape",
        "ConstantOfShape",
        "Cast",
        "Transpose",
        "Expand",
        "Slice",
        "Concat",
        "Gather",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "ReduceMean",
        "Softmax",
        "LayerNormalization",
        "MatMul",
        "Gemm",
        "Conv",
        "Split",
        "Pad",
        "Ceil",
        "Floor",
        "BatchNormalization",
        "CumSum",
        "Mod",
        "ScatterND",
    }
    covered = {c.op for c in CASES if c.error is None}
    assert not _OPSET_GAPS, f"schema versions of opsets 13-21 without a case: {sorted(_OPSET_GAPS)}"
    assert registered <= covered, sorted(registered - covered)
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


# ---- whole models: every node on the EP (strict), float models against ORT's CPU EP ----
BERTISH = """
<ir_version: 10, opset_import: ["" : 20]>
bertish (int64[B,T] ids, int64[B,T] mask) => (float[B,T,16] y) {
    e = Gather (table, ids)
    ln = LayerNormalization <axis=-1, epsilon=0.00001> (e, gamma, beta)
    q = MatMul (ln, wq)
    k = MatMul (ln, wk)
    v = MatMul (ln, wv)
    shp = Shape (q)
    b = Gather <axis=0> (shp, i0)
    t = Gather <axis=0> (shp, i1)
    bu = Unsqueeze (b, ax0)
    tu = Unsqueeze (t, ax0)
    heads_shape = Concat <axis=0> (bu, tu, heads, hdim)
    qh = Reshape (q, heads_shape)
    qt = Transpose <perm=[0,2,1,3]> (qh)
    kh = Reshape (k, heads_shape)
    kt = Transpose <perm=[0,2,3,1]> (kh)
    vh = Reshape (v, heads_shape)
    vt = Transpose <perm=[0,2,1,3]> (vh)
    sc = MatMul (qt, kt)
    scd = Div (sc, sqrtd)
    m1 = Unsqueeze (mask, ax12)
    mz = Equal (m1, zero_i)
    neg = Where (mz, big_neg, zero_f)
    scm = Add (scd, neg)
    p = Softmax <axis=-1> (scm)
    cx = MatMul (p, vt)
    ct = Transpose <perm=[0,2,1,3]> (cx)
    flat_shape = Concat <axis=0> (bu, tu, minus1)
    cf = Reshape (ct, flat_shape)
    h1 = Add (cf, ln)
    g = Gelu (h1)
    ff = MatMul (g, w1)
    e1 = Div (ff, sqrt2)
    e2 = Erf (e1)
    e3 = Add (e2, one)
    e4 = Mul (ff, e3)
    e5 = Mul (e4, half)
    ff2 = MatMul (e5, w2)
    p2 = Pow (ff2, two)
    s2 = Sqrt (p2)
    tn = Tanh (s2)
    y0 = Add (tn, h1)
    sl = Slice (y0, sl_start, sl_end, ax1)
    c = Cast <to=1> (mask)
    cu = Unsqueeze (c, axm1)
    y1 = Mul (sl, cu)
    y1s = Shape (y1)
    co = ConstantOfShape <value=float[1] {1.0}> (y1s)
    y2 = Sub (y1, co)
    ex = Expand (bias16, y1s)
    y3 = Add (y2, ex)
    y = Identity (y3)
}
"""

MOBILENETISH = """
<ir_version: 10, opset_import: ["" : 18]>
mobilenetish (float[N,4,16,16] x) => (float[N,10] logits) {
    c1 = Conv <pads=[1,1,1,1], strides=[2,2]> (x, w1, b1)
    h1 = HardSwish (c1)
    dw = Conv <pads=[1,1,1,1], group=8> (h1, wdw, bdw)
    r6 = Clip (dw, zero, six)
    se = ReduceMean <keepdims=1> (r6, axes23)
    se1 = Conv (se, wse, bse)
    se2 = HardSigmoid <alpha=0.16666667, beta=0.5> (se1)
    sc = Mul (r6, se2)
    sg = Sigmoid (sc)
    sw = Mul (sc, sg)
    cat = Concat <axis=1> (sw, h1)
    ap = AveragePool <kernel_shape=[2,2], strides=[2,2]> (cat)
    d = Sub (ap, shift)
    dd = Div (d, scale)
    gp = GlobalAveragePool (dd)
    fl = Flatten (gp)
    logits = Gemm <transB=1> (fl, wfc, bfc)
}
"""


def _bertish(rng: np.random.Generator) -> onnx.ModelProto:
    def w(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {
        "table": w(30, 16, scale=1.0),
        "gamma": w(16) + 1,
        "beta": w(16),
        "wq": w(16, 16),
        "wk": w(16, 16),
        "wv": w(16, 16),
        "w1": w(16, 32),
        "w2": w(32, 16),
        "bias16": w(16),
        "i0": np.array(0, np.int64),
        "i1": np.array(1, np.int64),
        "ax0": ints(0),
        "ax1": ints(1),
        "axm1": ints(-1),
        "ax12": ints(1, 2),
        "heads": ints(2),
        "hdim": ints(8),
        "minus1": ints(-1),
        "sqrtd": np.array(8**0.5, np.float32),
        "zero_i": np.array(0, np.int64),
        "big_neg": np.array(-1e4, np.float32),
        "zero_f": np.array(0, np.float32),
        "sqrt2": np.array(2**0.5, np.float32),
        "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
        "two": np.array(2, np.float32),
        "sl_start": ints(0),
        "sl_end": ints(BIG),
    }
    return _with_weights(BERTISH, weights)


def _mobilenetish(rng: np.random.Generator) -> onnx.ModelProto:
    def w(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {
        "w1": w(8, 4, 3, 3),
        "b1": w(8),
        "wdw": w(8, 1, 3, 3),
        "bdw": w(8),
        "zero": np.array(0, np.float32),
        "six": np.array(6, np.float32),
        "axes23": ints(2, 3),
        "wse": w(8, 8, 1, 1),
        "bse": w(8),
        "shift": w(16, 1, 1),
        "scale": np.abs(w(16, 1, 1)) + 0.5,
        "wfc": w(10, 16),
        "bfc": w(10),
    }
    return _with_weights(MOBILENETISH, weights)


def _with_weights(text: str, weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    proto = onnx.parser.parse_model(text)
    proto.graph.initializer.extend(onnx.numpy_helper.from_array(a, n) for n, a in weights.items())
    onnx.checker.check_model(proto, full_check=True)
    return proto


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize("which", ["bertish", "mobilenetish"])
def test_float_model_runs_entirely_on_the_ep(which: str, device: str, rng: np.random.Generator, has_gpu: bool):
    if not hasattr(fp8ort, "InferenceSession"):
        pytest.skip("fp8ort.InferenceSession is not in this build (branch ep)")
    if device == "gpu" and not has_gpu:
        pytest.skip("fp8ort finds no GPU device")
    if which == "bertish":
        model = _bertish(rng)
        ids = rng.integers(0, 30, size=(2, 7)).astype(np.int64)
        mask = (rng.random((2, 7)) < 0.8).astype(np.int64)
        feeds = {"ids": ids, "mask": mask}
    else:
        model = _mobilenetish(rng)
        feeds = {"x": rng.standard_normal((2, 4, 16, 16)).astype(np.float32)}
    sess = fp8ort.InferenceSession(model.SerializeToString(), device=device, strict=True)
    assert set(sess.placement.values()) == {"Fp8OrtExecutionProvider"}
    got = sess.run(None, feeds)[0]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


QK_TRANSPOSED = """
<ir_version: 10, opset_import: ["" : 20]>
qk (float[2,12,128,64] q, float[2,12,128,64] k) => (float[2,12,128,128] s) {
    kt = Transpose <perm=[0,1,3,2]> (k)
    s = MatMul (q, kt)
}
"""


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_attention_scores_with_transposed_keys(device: str, rng: np.random.Generator, has_gpu: bool) -> None:
    """Q K^T as BERT exports it (a Transpose feeding the MatMul), large enough for the GPU's cuBLASLt route."""
    if not hasattr(fp8ort, "InferenceSession"):
        pytest.skip("fp8ort.InferenceSession is not in this build (branch ep)")
    if device == "gpu" and not has_gpu:
        pytest.skip("fp8ort finds no GPU device")
    model = onnx.parser.parse_model(QK_TRANSPOSED)
    onnx.checker.check_model(model, full_check=True)
    feeds = {n: rng.uniform(-1, 1, (2, 12, 128, 64)).astype(np.float32) for n in ("q", "k")}
    sess = fp8ort.InferenceSession(model.SerializeToString(), device=device, strict=True)
    got = sess.run(None, feeds)[0]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("which", ["resnetish", "bottleneck", "resnet"])
def test_quantized_model_runs_entirely_on_the_ep(which: str, rng: np.random.Generator):
    """Quantized CNNs with every node on the EP's CPU device, bit-identical to the custom-op route."""
    if not hasattr(fp8ort, "InferenceSession"):
        pytest.skip("fp8ort.InferenceSession is not in this build (branch ep)")
    import onnx_ir as ir

    from fp8ort import zoo

    from ..quantization import qmodels

    if which == "resnet":
        model = ir.from_proto(zoo.resnet(blocks=(1, 1), width=16, size=32, num_classes=10))
    else:
        model = getattr(qmodels, which)()
    q = ir.to_proto(fp8ort.quantize(model, calibration_data=qmodels.calib(model, n=4)))
    inp = q.graph.input[0]
    shape = [2] + [d.dim_value for d in inp.type.tensor_type.shape.dim[1:]]
    feeds = {inp.name: rng.standard_normal(shape).astype(np.float32)}
    sess = fp8ort.InferenceSession(q, device="cpu", strict=True)
    got = sess.run(None, feeds)
    want = ops.run(q, feeds)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
