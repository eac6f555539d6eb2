"""``attention_float16``: the FP8MatMul projections that only FP8Attention reads write float16 Q, K and V.

The hand-built BERT-like block of ``test_attention_fusion`` (its three projections packed into one FP8MatMul) is
quantized with the switch on (the default) and off, and with a value projection whose calibrated range is past
``FLOAT16_QKV_LIMIT``; ``Float16QkvPass`` alone runs on small graphs of com.fp8ort ops (``test_qkv_pack``'s block)
for the cases that keep float32, each with its reason. Outputs go through the plugin EP's CPU device and the NumPy
emulation.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper
from test_attention_fusion import MIN_SQNR_DB, _attrs, _nodes, attention_feed, attention_model
from test_qkv_pack import HEADS, B, N, S, _block, _feed

import fp8ort
import fp8ort.quantization as fq
from fp8ort import emulate
from fp8ort.numerics import sqnr_db
from fp8ort.quantization.attention import ATTENTION_INFO_KEY
from fp8ort.quantization.qkv import FLOAT16_QKV_LIMIT, Float16QkvPass

F16 = TensorProto.FLOAT16


def _value_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type of every typed value of the graph (inputs, outputs, value_info)."""
    g = model.graph
    return {v.name: v.type.tensor_type.elem_type for v in [*g.input, *g.output, *g.value_info]}


def _qkv_producers(model: onnx.ModelProto, attn: onnx.NodeProto) -> list[onnx.NodeProto]:
    by_output = {o: n for n in model.graph.node for o in n.output}
    return [by_output[name] for name in attn.input[:3] if name]


def _quantize(model: onnx.ModelProto, **config):
    return fq.quantize(
        model, calibration_data=attention_feed(8, 1), config=fq.QuantizeConfig(**config), return_report=True
    )


def test_packed_projection_writes_float16(library):
    """The default: the packed Q, K, V projection writes float16 for FP8Attention; the report's line of the block
    and a note say so; the plugin EP runs it (the CPU kernels widen float16 exactly) with the emulation's bits, and
    the output stays within float16 rounding of the float32 build's."""
    src = attention_model()
    fp8, report = _quantize(src)
    onnx.checker.check_model(fp8, full_check=True)
    (attn,) = _nodes(fp8, "FP8Attention")
    assert list(attn.input[1:3]) == ["", ""]  # packed
    (proj,) = _qkv_producers(fp8, attn)
    assert proj.op_type == "FP8MatMul" and _attrs(proj)["output_dtype"] == F16
    assert _value_types(fp8)[attn.input[0]] == F16
    line = report.node("p").reason
    assert "; float16 Q, K and V (projection max |x| " in line and "on the calibration data)" in line, line
    assert any(n.startswith("attention_float16: 1 of 1 FP8Attention read float16") for n in report.notes)

    plain, plain_report = _quantize(src, attention_float16=False)
    (attn32,) = _nodes(plain, "FP8Attention")
    (proj32,) = _qkv_producers(plain, attn32)
    assert _attrs(proj32)["output_dtype"] == TensorProto.FLOAT and _value_types(plain)[attn32.input[0]] != F16
    assert "float16" not in plain_report.node("p").reason
    assert not any(n.startswith("attention_float16") for n in plain_report.notes)

    feed = attention_feed(4, 7)
    got = fp8ort.InferenceSession(fp8, device="cpu", strict=True).run(None, feed)[0]
    want = emulate.run_reference(fp8, feed)[0]
    assert got.tobytes() == want.tobytes()
    assert sqnr_db(emulate.run_reference(plain, feed)[0], got) >= MIN_SQNR_DB


def test_fuse_attention_off_writes_no_float16():
    fp8, report = _quantize(attention_model(), fuse_attention=False)
    assert not _nodes(fp8, "FP8Attention")
    assert F16 not in _value_types(fp8).values()
    assert all(_attrs(n).get("output_dtype", TensorProto.FLOAT) != F16 for n in _nodes(fp8, "FP8MatMul"))
    assert not any(n.startswith("attention_float16") for n in report.notes)


def test_range_guard_keeps_float32(library):
    """A value projection past FLOAT16_QKV_LIMIT on the calibration data (huge weights): the packed projection keeps
    float32, and the block's report line gives the reason with the observed maximum."""
    src = attention_model()
    for t in src.graph.initializer:
        if t.name == "wv":
            t.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(t) * np.float32(1e4), "wv"))
    fp8, report = _quantize(src)
    (attn,) = _nodes(fp8, "FP8Attention")
    (proj,) = _qkv_producers(fp8, attn)
    assert _attrs(proj)["output_dtype"] == TensorProto.FLOAT and _value_types(fp8)[attn.input[0]] != F16
    line = report.node("p").reason
    assert "; float32 Q, K and V: v reached max |x| " in line, line
    assert f"above {FLOAT16_QKV_LIMIT:g} (float16 ends at 65504)" in line
    observed = float(line.split("max |x| ")[1].split(" ")[0])
    assert observed > FLOAT16_QKV_LIMIT
    assert any("0 of 1 FP8Attention read float16" in n and "1 keep float32" in n for n in report.notes)
    feed = attention_feed(2, 3)
    got = fp8ort.InferenceSession(fp8, device="cpu", strict=True).run(None, feed)[0]
    assert got.tobytes() == emulate.run_reference(fp8, feed)[0].tobytes()


# ----------------------------------------------------------------------------------------- the pass alone

SMALL = {"p_q": 3.0, "p_k": 5.0, "p_v": 7.0}


def _run_pass(model: onnx.ModelProto, observed: dict[str, float]) -> tuple[onnx.ModelProto, str]:
    m = ir.from_proto(model)
    Float16QkvPass(observed)(m)
    attn = next(n for n in m.graph if n.op_type == "FP8Attention")
    return ir.to_proto(m), attn.meta[ATTENTION_INFO_KEY]


def test_three_projections_write_float16(library):
    """Unpacked Q, K and V (K and V from another input): all three FP8MatMuls write float16; the plugin EP gives the
    emulation's bits, within float16 rounding of the float32 graph."""
    model = _block(cross=True)
    half, line = _run_pass(model, SMALL)
    assert line == "FP8Attention; float16 Q, K and V (projection max |x| 7 on the calibration data)"
    types = _value_types(half)
    attn = next(n for n in half.graph.node if n.op_type == "FP8Attention")
    assert all(types[name] == F16 for name in attn.input[:3])
    assert all(_attrs(p)["output_dtype"] == F16 for p in _qkv_producers(half, attn))
    feed = _feed(model)
    got = fp8ort.InferenceSession(half, device="cpu", strict=True).run(None, feed)[0]
    assert got.tobytes() == emulate.run_reference(half, feed)[0].tobytes()
    want = fp8ort.InferenceSession(model, device="cpu", strict=True).run(None, feed)[0]
    assert sqnr_db(want, got) >= MIN_SQNR_DB  # sharp softmaxes: large scores carry the rounding of Q and K


def _shared_kv() -> onnx.ModelProto:
    """``_block(cross=True)`` plus a second FP8Attention reading the same K and V with a Q fed as a graph input."""
    model = _block(cross=True)
    g = model.graph
    g.input.append(helper.make_tensor_value_info("q2", TensorProto.FLOAT, [B, S, N]))
    g.node.append(
        helper.make_node("FP8Attention", ["q2", "p_k", "p_v"], ["y2"], domain="com.fp8ort", num_heads=HEADS, name="a2")
    )
    g.output.append(helper.make_tensor_value_info("y2", TensorProto.FLOAT, [B, S, N]))
    return model


@pytest.mark.parametrize(
    ("make", "observed", "reason"),
    [
        (lambda: _block(cross=True), {**SMALL, "p_v": 20000.0}, "p_v reached max |x| 2e+04 on the calibration data"),
        (lambda: _block(cross=True), {"p_q": 1.0, "p_k": 1.0}, "no calibrated range for p_v"),
        (lambda: _block(cross=True, extra_reader=True), SMALL, "p_k is a graph output"),
        (lambda: _block(cross=True, activation="Relu"), SMALL, "the projection proj_v has a fused activation"),
        (_shared_kv, SMALL, "p_k is also read by a2, which keeps float32 Q, K and V"),
    ],
    ids=["range", "no-range", "graph-output", "activation", "shared"],
)
def test_cases_that_keep_float32(make, observed, reason):
    """Any Q, K or V that may not turn float16 keeps all three float32 (one type for the three), with the reason on
    the attention's report line; a projection shared with an attention that keeps float32 keeps it too."""
    model = make()
    kept, line = _run_pass(model, observed)
    assert line.startswith("FP8Attention; float32 Q, K and V: ") and reason in line, line
    assert F16 not in _value_types(kept).values()
    assert all(_attrs(n).get("output_dtype", TensorProto.FLOAT) != F16 for n in kept.graph.node)
