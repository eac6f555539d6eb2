"""Loading, checking, shape-inferring and saving models; ORT sessions over in-memory models."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Union

import numpy as np
import onnx
import onnx_ir as ir

from .errors import ModelLoadError, QuantizeError

ModelLike = Union[str, os.PathLike, onnx.ModelProto, ir.Model]  # noqa: UP007 (a runtime alias)
TWO_GB = 2**31
MIN_OPSET = 13  # Clip/Split/Squeeze with tensor inputs; older models: convert with onnx.version_converter
QDQ_OPSET = 21  # FP8 QuantizeLinear/DequantizeLinear (>= 19) with blocked/axis support


def load_model(model: ModelLike) -> ir.Model:
    """An ``ir.Model`` from a path, a ``ModelProto`` or an ``ir.Model`` (copied, never modified in place)."""
    if isinstance(model, ir.Model):
        return ir.from_proto(ir.to_proto(model))
    if isinstance(model, onnx.ModelProto):
        return ir.from_proto(model)
    if not isinstance(model, (str, os.PathLike)):
        raise ModelLoadError(
            f"model must be a path, an onnx.ModelProto or an onnx_ir.Model, not {type(model).__name__}"
        )
    path = Path(model)
    if not path.is_file():
        raise ModelLoadError(f"{path} does not exist or is not a file; pass the path of an .onnx model")
    try:
        proto = onnx.load(str(path), load_external_data=True)
    except Exception as exc:  # protobuf raises DecodeError, external data raises OSError/ValidationError
        raise ModelLoadError(
            f"{path} is not a readable ONNX model ({type(exc).__name__}: {exc}); the file may be truncated, "
            "not ONNX, or its external data file may be missing next to it"
        ) from exc
    if not proto.graph.node:
        raise ModelLoadError(f"{path} parsed as an ONNX model with an empty graph; it is not ONNX or is truncated")
    return ir.from_proto(proto)


def model_nbytes(model: ir.Model) -> int:
    """Bytes of all initializers (what decides whether the model needs external data)."""
    total = 0
    for v in model.graph.initializers.values():
        if v.const_value is not None:
            total += v.const_value.nbytes
    return total


def default_opset(model: ir.Model) -> int:
    return int(model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0)))


def prepare_opset(model: ir.Model, minimum: int) -> ir.Model:
    """The model with its default-domain opset raised to ``minimum`` (version converter), or an error."""
    version = default_opset(model)
    if version >= minimum:
        return model
    if model_nbytes(model) > TWO_GB // 2:
        raise QuantizeError(
            f"the model uses opset {version} but fp8ort needs >= {minimum}, and it is too large to convert in "
            f"memory; convert it first with onnx.version_converter.convert_version(model, {minimum})"
        )
    try:
        proto = onnx.version_converter.convert_version(ir.to_proto(model), minimum)
    except Exception as exc:
        raise QuantizeError(
            f"the model uses opset {version}; fp8ort needs >= {minimum} and onnx.version_converter failed "
            f"({exc}); re-export the model at opset >= {minimum}"
        ) from exc
    return ir.from_proto(proto)


def infer_shapes(model: ir.Model) -> ir.Model:
    """ONNX shape inference (with data propagation); large models go through a temporary file."""
    if model_nbytes(model) < TWO_GB // 2:
        proto = ir.to_proto(model)
        try:
            proto = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False, data_prop=True)
        except Exception as exc:
            raise QuantizeError(f"ONNX shape inference failed on the model: {exc}") from exc
        return ir.from_proto(proto)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.onnx"), os.path.join(tmp, "out.onnx")
        ir.save(model, src, external_data="in.onnx.data")
        onnx.shape_inference.infer_shapes_path(src, dst)
        proto = onnx.load(dst, load_external_data=True)
    return ir.from_proto(proto)


def save_model(model: ir.Model, path: str | os.PathLike, external_data: bool | None = None) -> None:
    """Write ``model``; weights go to ``<name>.data`` when asked or when the model is over 2 GB."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if external_data is None:
        external_data = model_nbytes(model) > TWO_GB - 2**24
    if external_data:
        ir.save(model, str(path), external_data=path.name + ".data")
    else:
        ir.save(model, str(path))


class Session:
    """An onnxruntime CPU session over an in-memory ``ir.Model`` (via a temp file when over 2 GB)."""

    def __init__(self, model: ir.Model, custom_ops_library: str | None = None, threads: int = 0) -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 3
        # run QDQ as written: ORT 1.30 fuses DQ(FP8)+MatMul into MatMulIntegerToFloat, which rejects FP8 inputs
        so.add_session_config_entry("session.disable_quant_qdq", "1")
        if threads:
            so.intra_op_num_threads = threads
        if custom_ops_library:
            so.register_custom_ops_library(custom_ops_library)
        self._tmp: tempfile.TemporaryDirectory | None = None
        if model_nbytes(model) > TWO_GB // 2:
            self._tmp = tempfile.TemporaryDirectory()
            path = os.path.join(self._tmp.name, "model.onnx")
            ir.save(model, path, external_data="model.onnx.data")
            self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        else:
            data = ir.to_proto(model).SerializeToString()
            self.sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        self.output_names = [o.name for o in self.sess.get_outputs()]

    def run(self, feed: dict[str, np.ndarray], outputs: list[str] | None = None) -> dict[str, Any]:
        names = outputs or self.output_names
        return dict(zip(names, self.sess.run(names, feed)))


def with_outputs(model: ir.Model, names: list[str]) -> ir.Model:
    """A copy of ``model`` whose graph outputs are the named values (for calibration and per-layer SQNR)."""
    m = ir.from_proto(ir.to_proto(model))
    values = {v.name: v for n in m.graph for v in n.outputs}
    values.update({v.name: v for v in m.graph.inputs})
    existing = {v.name for v in m.graph.outputs}
    for name in names:
        if name not in existing and name in values:
            m.graph.outputs.append(values[name])
            existing.add(name)
    return m
