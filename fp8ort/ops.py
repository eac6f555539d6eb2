"""Build small ONNX models around one ``com.fp8ort`` op, and run models that use the ops through ORT's CPU route.

Used by the tests, the README example and the benchmarks; handy for trying an op by hand::

    model = fp8ort.ops.make_op_model("FP8Conv", {"X": x, "W": w_fp8, "x_scale": xs, "w_scale": ws},
                                     graph_inputs=["X"], pads=[1, 1, 1, 1], activation="Relu")
    y = fp8ort.ops.run(model, {"X": x})[0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from . import numerics as nx
from ._library import get_library_path

DOMAIN = "com.fp8ort"
OPSET_IMPORTS = [helper.make_opsetid("", 19), helper.make_opsetid(DOMAIN, 1)]
IR_VERSION = 10  # loads in every onnxruntime >= 1.24

INPUT_NAMES = {
    "FP8Conv": ["X", "W", "x_scale", "w_scale", "B", "Z", "z_scale", "y_scale"],
    "FP8MatMul": ["A", "B", "a_scale", "b_scale", "C", "Z", "z_scale", "y_scale"],
    "FP8Quantize": ["X", "scale"],
    "FP8Dequantize": ["X", "scale"],
    "FP8MaxPool": ["X"],
    "FP8Attention": ["Q", "K", "V", "attn_bias", "y_scale"],
    "FP8LayerNormalization": ["X", "Scale", "B", "y_scale"],
    "FP8GlobalAveragePool": ["X", "x_scale"],
    "FP8ChannelMul": ["X", "x_scale", "G", "y_scale"],
}
NO_OUTPUT_DTYPE = ("FP8MaxPool", "FP8GlobalAveragePool")  # ops without an output_dtype attribute
OUTPUT_NAMES = {"FP8LayerNormalization": ["Y", "Y_fp8"]}  # ops with more than the one output "Y"


def onnx_type_of(a: np.ndarray) -> int:
    """ONNX element type of a NumPy array (FP8 dtypes from ml_dtypes included)."""
    if nx.is_fp8(a.dtype):
        return nx.get_format(a.dtype).onnx_type
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def make_op_model(
    op_type: str,
    inputs: Mapping[str, np.ndarray | None],
    *,
    graph_inputs: Sequence[str] = ("X",),
    output_dtype: int | None = None,
    **attrs: Any,
) -> onnx.ModelProto:
    """One-node model: names in ``graph_inputs`` become graph inputs, the other arrays initializers.

    ``inputs`` maps the op's input names (see ``INPUT_NAMES``) to arrays; absent or None inputs are left out.
    """
    if op_type not in INPUT_NAMES:
        raise ValueError(f"unknown op {op_type!r}; use one of {sorted(INPUT_NAMES)}")
    names = INPUT_NAMES[op_type]
    unknown = set(inputs) - set(names)
    if unknown:
        raise ValueError(f"{op_type} has no input(s) {sorted(unknown)}; its inputs are {names}")
    last = max((i for i, n in enumerate(names) if inputs.get(n) is not None), default=-1)
    node_inputs, graph_in, inits = [], [], []
    for name in names[: last + 1]:
        arr = inputs.get(name)
        if arr is None:
            node_inputs.append("")
            continue
        arr = np.asarray(arr)
        node_inputs.append(name)
        if name in graph_inputs:
            graph_in.append(helper.make_tensor_value_info(name, onnx_type_of(arr), list(arr.shape)))
        else:
            inits.append(numpy_helper.from_array(arr, name))
    x_type = onnx_type_of(np.asarray(inputs[names[0]]))
    if op_type == "FP8GlobalAveragePool":
        out_types = [TensorProto.FLOAT]
    elif op_type in NO_OUTPUT_DTYPE:
        out_types = [output_dtype if output_dtype is not None else x_type]
    else:
        if output_dtype is None:
            fp8_default = op_type in ("FP8Quantize", "FP8LayerNormalization", "FP8ChannelMul")
            output_dtype = TensorProto.FLOAT8E4M3FN if fp8_default else TensorProto.FLOAT
        attrs["output_dtype"] = output_dtype
        out_types = [x_type, output_dtype] if op_type == "FP8LayerNormalization" else [output_dtype]
    out_names = OUTPUT_NAMES.get(op_type, ["Y"])
    node = helper.make_node(op_type, node_inputs, out_names, domain=DOMAIN, **attrs)
    outputs = [helper.make_tensor_value_info(n, t, None) for n, t in zip(out_names, out_types)]
    graph = helper.make_graph([node], f"{op_type}_test", graph_in, outputs, inits)
    return helper.make_model(graph, opset_imports=OPSET_IMPORTS, ir_version=IR_VERSION)


def session(model: onnx.ModelProto | str | bytes, library: str | None = None, threads: int = 0):
    """An ``onnxruntime.InferenceSession`` on the CPU with the fp8ort custom-op library registered."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.register_custom_ops_library(library or get_library_path())
    if threads:
        so.intra_op_num_threads = threads
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def to_ort_value(a: np.ndarray):
    """An ``OrtValue`` over a C-contiguous array the ops take (FP8 and bfloat16 go in through their bytes).

    The OrtValue does not own the memory: keep ``a`` alive while it is used.
    """
    import onnxruntime as ort

    if not a.flags.c_contiguous:
        raise ValueError("to_ort_value needs a C-contiguous array; pass np.ascontiguousarray(a) and keep it alive")
    if nx.is_fp8(a.dtype):
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(a.view(np.uint8), nx.get_format(a.dtype).onnx_type)
    if a.dtype == nx.HIGH_PRECISION[TensorProto.BFLOAT16]:
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(a.view(np.uint16), TensorProto.BFLOAT16)
    return ort.OrtValue.ortvalue_from_numpy(a)


def run(model_or_session, feeds: Mapping[str, np.ndarray], library: str | None = None) -> list[np.ndarray]:
    """Run a model (or session) on the CPU route; FP8 outputs come back with their ml_dtypes dtype."""
    sess = model_or_session if hasattr(model_or_session, "run_with_ort_values") else session(model_or_session, library)
    arrays = {k: np.ascontiguousarray(v) for k, v in feeds.items()}  # alive until the run returns
    values = {k: to_ort_value(a) for k, a in arrays.items()}
    outs = sess.run_with_ort_values(None, values)
    result = []
    for out, meta in zip(outs, sess.get_outputs()):
        fmt = _FP8_BY_ORT_NAME.get(meta.type)
        if fmt is not None:
            # ORT hands FP8 tensors to NumPy as raw bytes; reinterpret them with their real dtype.
            arr = np.frombuffer(_tensor_bytes(out), dtype=np.uint8).reshape(out.shape()).view(fmt.dtype)
            result.append(arr.copy())
        else:
            result.append(out.numpy())
    return result


_FP8_BY_ORT_NAME = {
    "tensor(float8e4m3fn)": nx.E4M3FN,
    "tensor(float8e5m2)": nx.E5M2,
    "tensor(float8e4m3fnuz)": nx.E4M3FNUZ,
    "tensor(float8e5m2fnuz)": nx.E5M2FNUZ,
}


def _tensor_bytes(value, itemsize: int = 1) -> bytes:
    """Raw bytes of a CPU OrtValue (ORT cannot hand every element type to NumPy)."""
    try:
        return value.numpy().tobytes()
    except Exception:
        import ctypes

        n = int(np.prod(value.shape())) * itemsize
        return ctypes.string_at(value.data_ptr(), n)
