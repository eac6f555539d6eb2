"""The graph pass: op types after rewriting, fusions, exclusions, declared types, checker."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import qmodels

import fp8ort.quantization as fq
from fp8ort.quantization.config import METADATA_KEY

NCHW = fq.QuantizeConfig(layout="NCHW")  # the op sequences asserted below are those of the NCHW layout


def _ops(model: ir.Model) -> list[str]:
    return [n.op_type for n in model.graph]


def _check(model: ir.Model) -> None:
    proto = ir.to_proto(model)
    onnx.checker.check_model(proto, full_check=True)
    declared = {v.name: v for v in list(proto.graph.value_info) + list(proto.graph.output)}
    for node in proto.graph.node:
        if node.domain == "com.fp8ort":
            for out in node.output:
                assert out in declared, f"{node.op_type} output {out} has no declared type"
                t = declared[out].type.tensor_type
                assert t.elem_type != 0 and t.HasField("shape")


def test_resnetish_is_rewritten_into_fp8_ops(resnetish):
    q, rep = fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish), config=NCHW, return_report=True)
    assert _ops(q) == [
        "FP8Conv",
        "MaxPool",
        "FP8Conv",
        "FP8Conv",
        "FP8Conv",
        "FP8GlobalAveragePool",
        "Flatten",
        "FP8MatMul",
    ]
    _check(q)
    status = {n.name: n.status for n in rep.nodes}
    assert status["BatchNormalization_1"] == "folded"
    assert status["Add_7"] == "fused" and status["Relu_8"] == "fused"
    assert rep.fp8_mac_share == 1.0
    assert json.loads(q.metadata_props[METADATA_KEY])["calibration_method"] == "max"
    # FP8 flows between consecutive FP8 convs and into the head's FP8GlobalAveragePool, but not into the NCHW
    # MaxPool (FP8MaxPool is NHWC only)
    types = {n.name: n.outputs[0].dtype for n in q.graph}
    assert types["Conv_4"] == ir.DataType.FLOAT8E4M3FN and types["Conv_6"] == ir.DataType.FLOAT8E4M3FN
    assert types["Conv_0"] == ir.DataType.FLOAT and types["Conv_9"] == ir.DataType.FLOAT8E4M3FN
    # the residual input of Conv_6 is MaxPool's float output; its weights are FP8 initializers
    conv6 = next(n for n in q.graph if n.name == "Conv_6")
    assert conv6.inputs[5].name == "p1" and conv6.inputs[1].const_value.dtype == ir.DataType.FLOAT8E4M3FN
    w_scale = conv6.inputs[3].const_value.numpy()
    assert w_scale.shape == (8,) and np.all(w_scale > 0)


def test_zero_weight_channel_gets_valid_scale(resnetish):
    q = fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish))
    conv4 = next(n for n in q.graph if n.name == "Conv_4")
    assert conv4.inputs[3].const_value.numpy()[3] == 1.0


def test_encoder_fuses_bias_and_residual_and_leaves_activation_matmul(encoder):
    q, rep = fq.quantize(encoder, calibration_data=qmodels.calib(encoder), return_report=True)
    assert _ops(q) == ["FP8MatMul", "FP8MatMul", "Transpose", "MatMul"]  # the Identity before y is removed
    _check(q)
    assert "not a constant" in rep.node("MatMul_7").reason
    first = q.graph.node(0)
    assert first.attributes.get_string("activation") == "Relu"
    assert first.outputs[0].dtype == ir.DataType.FLOAT8E4M3FN  # feeds FP8MatMul only


@pytest.mark.parametrize(
    ("config", "kept"),
    [
        (fq.QuantizeConfig(op_types=("Conv",)), {"Gemm_13": "op_types"}),
        (fq.QuantizeConfig(exclude_op_types=("Gemm",)), {"Gemm_13": "excluded"}),
        (fq.QuantizeConfig(exclude_nodes=("^Conv_[46]$",)), {"Conv_4": "exclude_nodes", "Conv_6": "exclude_nodes"}),
        (
            fq.QuantizeConfig(keep_first_layer=True, keep_last_layer=True),
            {"Conv_0": "keep_first_layer", "Gemm_13": "keep_last_layer"},
        ),
    ],
)
def test_exclusions_stay_float_with_reason(resnetish, config, kept):
    q, rep = fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish), config=config, return_report=True)
    _check(q)
    for name, why in kept.items():
        node = rep.node(name)
        assert node.status == "float" and why in node.reason
        assert any(n.name == name and n.domain == "" for n in q.graph)
    assert rep.fp8_mac_share < 1.0


def test_nhwc_layout_transposes_only_at_edges(resnetish):
    q = fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish), config=fq.QuantizeConfig(layout="NHWC"))
    _check(q)
    convs = [n for n in q.graph if n.op_type == "FP8Conv"]
    assert all(n.attributes.get_string("layout") == "NHWC" for n in convs)
    assert _ops(q).count("Transpose") == 4  # in, out of the stem, after MaxPool, before GlobalAveragePool
    assert convs[1].outputs[0].shape[3] == 8  # NHWC shape declared


def test_fnuz_target(resnetish):
    q = fq.quantize(
        resnetish, calibration_data=qmodels.calib(resnetish), config=fq.QuantizeConfig(fp8_format="e4m3fnuz")
    )
    _check(q)
    w = [n.inputs[1].const_value for n in q.graph if n.op_type in ("FP8Conv", "FP8MatMul")]
    assert {t.dtype for t in w} == {ir.DataType.FLOAT8E4M3FNUZ}
    pooled = [n.inputs[0].dtype for n in q.graph if n.op_type == "FP8GlobalAveragePool"]
    assert pooled == [ir.DataType.FLOAT8E4M3FNUZ]


def test_qdq_format_uses_standard_ops_only(resnetish):
    q = fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish), config=fq.QuantizeConfig(format="qdq"))
    proto = ir.to_proto(q)
    onnx.checker.check_model(proto, full_check=True)
    assert all(n.domain == "" for n in proto.graph.node)
    assert max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")) >= 19
    ops = _ops(q)
    # five layer inputs, and the last conv's output that the fp8ort model pools in FP8 (FP8GlobalAveragePool)
    assert ops.count("Conv") == 4 and ops.count("QuantizeLinear") == 6
    fp8_inits = [t for t in proto.graph.initializer if t.data_type == onnx.TensorProto.FLOAT8E4M3FN]
    assert len(fp8_inits) == 5  # the five weights


def test_dynamic_batch_is_kept(resnetish):
    q = fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish))
    assert str(q.graph.inputs[0].shape[0]) == "N"
    fp8_value = next(n for n in q.graph if n.name == "Conv_4").outputs[0]
    assert str(fp8_value.shape[0]) == "N"


def test_config_json_roundtrip_and_validation():
    cfg = fq.QuantizeConfig(calibration_method="entropy", exclude_nodes=("a", "b"), accuracy_target_db=20.0)
    assert fq.QuantizeConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(fq.QuantizeError, match="calibration_method must be one of"):
        fq.QuantizeConfig(calibration_method="minmax")
    with pytest.raises(fq.QuantizeError, match="fp8_format"):
        fq.QuantizeConfig(fp8_format="e5m2")
    # "auto" calibration: max, or mse under an accuracy target; an explicit choice stays
    assert fq.QuantizeConfig().calibration_method == "max"
    assert fq.QuantizeConfig(accuracy_target_db=20.0).calibration_method == "mse"
    assert fq.QuantizeConfig(calibration_method="max", accuracy_target_db=20.0).calibration_method == "max"
    with pytest.raises(fq.QuantizeError, match="NHWC"):
        fq.QuantizeConfig(format="qdq", layout="NHWC")
    assert fq.QuantizeConfig().power_of_two_scales is False
    pow2 = fq.QuantizeConfig(power_of_two_scales=True)
    assert fq.QuantizeConfig.from_json(pow2.to_json()) == pow2
    with pytest.raises(fq.QuantizeError, match="power_of_two_scales must be True or False"):
        fq.QuantizeConfig(power_of_two_scales="false")


def test_add_of_two_convs_is_fused_once():
    model = qmodels.bottleneck()
    q, rep = fq.quantize(model, calibration_data=qmodels.calib(model), config=NCHW, return_report=True)
    _check(q)
    # the block input is quantized once for conv a and the downsample conv, which read it with the same scale
    assert sorted(_ops(q)) == ["FP8Conv"] * 4 + ["FP8Quantize"]
    fused = next(n for n in q.graph if n.name == "Conv_2")  # conv b absorbs Add + Relu
    assert fused.attributes.get_string("activation") == "Relu"
    z, z_scale = fused.inputs[5], fused.inputs[6]
    assert z.name == "d" and z.dtype == ir.DataType.FLOAT8E4M3FN and z_scale is not None  # producer came later
    assert rep.node("Add_4").fused_into == "Conv_2"
