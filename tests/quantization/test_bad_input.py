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
    assert sum(n.op_type in ("FP8Conv", "FP8MatMul") for n in q.graph.node) == 5


# ----------------------------------------------------------------------------------- refused models


def test_model_without_weight_layer_is_refused():
    text = """
    <ir_version: 10, opset_import: ["" : 21]>
    g (float[N,4] x, float[4,4] w) => (float[N,4] y) {
        h = MatMul (x, w)
        y = Relu (h)
    }
    """
    model = qmodels.build(text, {})
    feed = {"x": np.ones((2, 4), np.float32), "w": np.ones((4, 4), np.float32)}
    with pytest.raises(fq.QuantizeError, match="no weight layer.*export_params=True"):
        fq.quantize(model, calibration_data=[feed])


def test_opset_newer_than_any_converter_is_refused(resnetish):
    proto = ir.to_proto(resnetish)
    proto.opset_import[0].version = 40
    with pytest.raises(fq.QuantizeError, match=r"opset 40; fp8ort supports ai.onnx opsets 13 to 21.*opset_version"):
        fq.quantize(proto, calibration_data=qmodels.calib(resnetish))


def test_old_opset_is_converted_up(resnetish):
    text = qmodels.RESNETISH.replace('"" : 21', '"" : 11').replace("ir_version: 10", "ir_version: 6")
    weights = {v.name: v.const_value.numpy() for v in resnetish.graph.initializers.values()}
    proto = ir.to_proto(qmodels.build(text, weights))
    q, rep = fq.quantize(proto, calibration_data=qmodels.calib(resnetish), return_report=True)
    onnx.checker.check_model(q, full_check=True)
    assert sum(n.op_type in ("FP8Conv", "FP8MatMul") for n in q.graph.node) == 5
    assert "opset 11 converted to 21" in rep.notes[0]


@pytest.mark.parametrize(("ir_version", "match"), [(2, "IR version 2.*>= 3"), (onnx.IR_VERSION + 1, "upgrade onnx")])
def test_unsupported_ir_version_is_refused(resnetish, ir_version, match):
    proto = ir.to_proto(resnetish)
    proto.ir_version = ir_version
    with pytest.raises(fq.QuantizeError, match=match):
        fq.quantize(proto, calibration_data=qmodels.calib(resnetish))


def test_missing_external_data_is_named(tmp_path, resnetish):
    path = tmp_path / "m.onnx"
    onnx.save(ir.to_proto(resnetish), str(path), save_as_external_data=True, location="m.weights", size_threshold=0)
    (tmp_path / "m.weights").unlink()
    with pytest.raises(fq.ModelLoadError, match=r"external data file\(s\) \['m.weights'\] that are missing"):
        fq.quantize(str(path), calibration_data=qmodels.calib(resnetish))


def test_model_proto_without_its_external_data_is_refused(tmp_path, resnetish):
    path = tmp_path / "m.onnx"
    onnx.save(ir.to_proto(resnetish), str(path), save_as_external_data=True, location="m.weights", size_threshold=0)
    proto = onnx.load(str(path), load_external_data=False)
    with pytest.raises(fq.ModelLoadError, match="not loaded; pass the model's path"):
        fq.quantize(proto, calibration_data=qmodels.calib(resnetish))
    q = fq.quantize(str(path), calibration_data=qmodels.calib(resnetish))  # the path works
    assert sum(n.op_type in ("FP8Conv", "FP8MatMul") for n in q.graph.node) == 5


# ---------------------------------------------------------------------------------- the output file


def test_failed_save_leaves_no_file(tmp_path, resnetish, monkeypatch):
    out = tmp_path / "q.onnx"
    out.write_bytes(b"the previous model")
    real_save = ir.save

    def broken_save(model, path, **kwargs):
        real_save(model, path, **kwargs)
        with open(path, "r+b") as f:  # half a model, then the disk fills up
            f.truncate(100)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ir, "save", broken_save)
    with pytest.raises(fq.QuantizeError, match="cannot write .*No space left"):
        fq.quantize(resnetish, out, calibration_data=qmodels.calib(resnetish))
    assert out.read_bytes() == b"the previous model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]  # no temporary files left behind


def test_output_path_that_is_a_folder_is_refused(tmp_path, resnetish):
    with pytest.raises(fq.QuantizeError, match="is a folder"):
        fq.quantize(resnetish, tmp_path, calibration_data=qmodels.calib(resnetish))
