"""bench/model_convs.py: the convolution layers the per-layer GPU benchmark times, read from a float model and the
model fp8ort.quantize made of it (CPU only; nothing is timed here)."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import onnx_ir as ir
import pytest

import fp8ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "quantization"))

import qmodels  # noqa: E402
from model_convs import model_convs  # noqa: E402


def quantized(tmp_path: Path, model: ir.Model, **config) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(ir.to_proto(model), src)
    cfg = fp8ort.QuantizeConfig(**config) if config else None
    fp8ort.quantize(str(src), str(dst), calibration_data=qmodels.calib(model), config=cfg)
    return onnx.load(src), onnx.load(dst)


def test_bottleneck_layers_in_graph_order_with_the_residual_on_the_right_conv(tmp_path):
    # the quantizer emits the downsample conv before the conv it joins; the layers follow the float graph's order
    layers, left = model_convs(*quantized(tmp_path, qmodels.bottleneck()))
    assert left == []
    assert [count for _, count in layers] == [1, 1, 1, 1]
    a, b, d, c = (layer for layer, _ in layers)
    assert (a.c, a.m, a.kh, a.pads, a.activation, a.residual) == (4, 8, 3, (1, 1, 1, 1), "Relu", False)
    assert (b.c, b.kh, b.activation, b.residual, b.pointwise) == (8, 1, "Relu", True, True)
    assert (d.c, d.kh, d.activation, d.residual, d.pointwise) == (4, 1, "", False, True)
    assert (c.activation, c.fp8_out) == ("", False)  # the model's output stays float
    assert all((layer.h, layer.w) == (8, 8) for layer in (a, b, d, c))
    assert b.macs(2) == 2 * 8 * 8 * 8 * 8


def test_depthwise_and_folded_batchnorm(tmp_path):
    layers, left = model_convs(*quantized(tmp_path, qmodels.resnetish()))
    assert left == []
    first, *_, dw = (layer for layer, _ in layers)
    assert (first.c, first.h, first.w, first.m) == (3, 16, 16, 8)
    assert dw.depthwise and dw.group == dw.c == dw.m == 8 and not dw.pointwise


def test_layers_left_in_float_are_listed_not_timed(tmp_path):
    model = qmodels.bottleneck()
    names = [node.name for node in model.graph if node.op_type == "Conv"]
    assert names == ["", "", "", ""]  # named by the quantizer: Conv_<index>
    layers, left = model_convs(*quantized(tmp_path, model, exclude_nodes=("Conv_3",)))
    assert left == ["Conv_3"]
    assert sum(count for _, count in layers) == 3


def test_a_quantized_model_from_another_float_model_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fp32, _ = quantized(tmp_path / "a", qmodels.bottleneck())
    _, other = quantized(tmp_path / "b", qmodels.resnetish())
    with pytest.raises(ValueError, match="does not match the float Conv|have no float Conv"):
        model_convs(fp32, other)


def test_conv_shape_fields():
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    from gpu_lib import conv_shape

    s = conv_shape(2, 9, 11, 16, 32, (3, 5), (1, 2), (1, 2, 3, 4), (2, 1), 4)
    got = [getattr(s, f) for f, _ in s._fields_]
    assert got == [2, 9, 11, 16, 32, 3, 5, 1, 2, 1, 2, 3, 4, 2, 1, 4]
