"""Loading and saving models (external data, atomic writes); ORT sessions over in-memory models."""

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


def _tensors(graph: onnx.GraphProto):
    """Initializers and tensor attributes of ``graph`` and its subgraphs."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for g in attr.graphs:
                yield from _tensors(g)


def _external_files(proto: onnx.ModelProto) -> list[str]:
    """The external data files the tensors of ``proto`` name, where their data are not loaded."""
    files = []
    for t in _tensors(proto.graph):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            loc = next((e.value for e in t.external_data if e.key == "location"), None)
            if loc and loc not in files:
                files.append(loc)
    return files


def load_model(model: ModelLike) -> ir.Model:
    """An ``ir.Model`` from a path, a ``ModelProto`` or an ``ir.Model`` (copied, never modified in place)."""
    if isinstance(model, ir.Model):
        return ir.from_proto(ir.to_proto(model))
    if isinstance(model, onnx.ModelProto):
        missing = _external_files(model)
        if missing:
            raise ModelLoadError(
                f"the ModelProto keeps initializers in external data ({', '.join(missing[:3])}) that is not loaded; "
                "pass the model's path instead, or load it with onnx.load(path, load_external_data=True)"
            )
        return ir.from_proto(model)
    if not isinstance(model, (str, os.PathLike)):
        raise ModelLoadError(
            f"model must be a path, an onnx.ModelProto or an onnx_ir.Model, not {type(model).__name__}"
        )
    path = Path(model)
    if not path.is_file():
        raise ModelLoadError(f"{path} does not exist or is not a file; pass the path of an .onnx model")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises DecodeError
        raise ModelLoadError(
            f"{path} is not a readable ONNX model ({type(exc).__name__}: {exc}); the file may be truncated or not ONNX"
        ) from exc
    if not proto.graph.node:
        raise ModelLoadError(f"{path} parsed as an ONNX model with an empty graph; it is not ONNX or is truncated")
    missing = [f for f in _external_files(proto) if not (path.parent / f).is_file()]
    if missing:
        raise ModelLoadError(
            f"{path} keeps its weights in external data file(s) {missing} that are missing next to it "
            f"(looked in {path.parent}); copy them beside the model, keeping their names"
        )
    try:
        onnx.external_data_helper.load_external_data_for_model(proto, str(path.parent))
    except Exception as exc:
        raise ModelLoadError(
            f"the external data of {path} cannot be read ({type(exc).__name__}: {exc}); the .data file may be "
            "truncated or belong to another export: re-export the model"
        ) from exc
    return ir.from_proto(proto)


def model_nbytes(model: ir.Model) -> int:
    """Bytes of all initializers (what decides whether the model needs external data)."""
    total = 0
    for v in model.graph.initializers.values():
        if v.const_value is not None:
            total += v.const_value.nbytes
    return total


def save_model(model: ir.Model, path: str | os.PathLike, external_data: bool | None = None) -> None:
    """Write ``model``; weights go to ``<name>.data`` when asked or when the model is over 2 GB.

    The files are written in a temporary folder beside ``path`` and then moved into place (``os.replace``), so an
    interrupted or failed save never leaves a half-written model.
    """
    path = Path(path)
    if path.is_dir():
        raise QuantizeError(f"the output path {path} is a folder; give a file name such as {path / 'model.fp8.onnx'}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if external_data is None:
        external_data = model_nbytes(model) > TWO_GB - 2**24
    data_name = path.name + ".data"
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.") as tmp:
        tmp_model = Path(tmp) / path.name
        try:
            if external_data:
                ir.save(model, str(tmp_model), external_data=data_name)
            else:
                ir.save(model, str(tmp_model))
        except OSError as exc:
            raise QuantizeError(f"cannot write {path}: {exc}; check the folder's free space and permissions") from exc
        if external_data:
            os.replace(Path(tmp) / data_name, path.parent / data_name)  # the data first: the model refers to it
        os.replace(tmp_model, path)


class Session:
    """An onnxruntime CPU session over an in-memory ``ir.Model`` (via a temp file when over 2 GB)."""

    def __init__(self, model: ir.Model, custom_ops_library: str | None = None, threads: int = 0) -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 3
        # onnxruntime 1.30/1.31 fuse FP8 DequantizeLinear->MatMul into MatMulIntegerToFloat and then reject their own
        # graph; the QDQ emulation must run as written anyway, so every session keeps QDQ nodes as they are.
        so.add_session_config_entry("session.disable_quant_qdq", "1")
        if any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in model.graph):
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
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
