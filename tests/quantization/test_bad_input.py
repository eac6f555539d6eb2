"""Files that are not models, truncated models, unsupported patterns: clear errors or float with a reason."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import qmodels

import fp8ort.quantization as fq


def test_not_onnx(tmp_path):
    p = tmp_path / "model.onnx"
    p.write_bytes(b"this is not a model at all" * 10)
    with pytest.raises(fq.ModelLoadError, match="not a readable ONNX model|empty graph"):
        fq.quantize(str(p), calibration_data={})


def test_truncated(tmp_path, resnetish):
    p = tmp_path / "model.onnx"
    data = ir.to_proto(resnetish).SerializeToString()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(fq.ModelLoadError, match="truncated"):
        fq.quantize(str(p), calibration_data={})


def test_missing_file():
    with pytest.raises(fq.ModelLoadError, match="does not exist"):
        fq.quantize("/nonexistent/model.onnx")


def test_unsupported_patterns_stay_float():
    text = """
    <ir_version: 10, opset_import: ["" : 21]>
    g (float[N,4,8] x, float[4,4,3] wdyn) => (float[N,4,8] y, float[N,4,8] z) {
        y = Conv <pads=[1,1]> (x, w1d)
        z = Conv <pads=[1,1]> (y, wdyn)
    }
    """
    model = qmodels.build(text, {"w1d": np.ones((4, 4, 3), np.float32)})
    feed = {"x": np.ones((2, 4, 8), np.float32), "wdyn": np.ones((4, 4, 3), np.float32)}
    q, rep = fq.quantize(model, calibration_data=[feed], return_report=True)
    assert [n.op_type for n in q.graph] == ["Conv", "Conv"]
    assert "2-D convolutions" in rep.node("Conv_0").reason
    assert "weight is not a constant" in rep.node("Conv_1").reason
    onnx.checker.check_model(ir.to_proto(q), full_check=True)


def test_external_data_output(tmp_path, resnetish):
    out = tmp_path / "q.onnx"
    fq.quantize(resnetish, out, calibration_data=qmodels.calib(resnetish), external_data=True)
    assert (tmp_path / "q.onnx.data").is_file()
    onnx.checker.check_model(str(out), full_check=True)
    proto = onnx.load(str(out))
    assert any(t.data_type == onnx.TensorProto.FLOAT8E4M3FN for t in proto.graph.initializer)


def test_old_opset_is_converted(resnetish):
    proto = onnx.version_converter.convert_version(ir.to_proto(resnetish), 17)
    q = fq.quantize(proto, calibration_data=qmodels.calib(resnetish))
    assert isinstance(q, onnx.ModelProto)
    onnx.checker.check_model(q, full_check=True)
    assert sum(n.domain == "com.fp8ort" for n in q.graph.node) == 5
