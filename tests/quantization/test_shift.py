"""Activation mean shift (``fp8ort/quantization/shift.py``): exact in float, lower FP8 noise where it applies, and
left alone where a reader pads its input."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest
import qmodels
from conftest import run_float

import fp8ort.quantization as fq
from fp8ort.numerics import E4M3FN, compute_scale, dequantize, quantize, sqnr_db
from fp8ort.quantization import model_io as mio
from fp8ort.quantization import shift
from fp8ort.quantization.api import Plan

# PP-OCR style: a learnable affine (x * a + b, scalar b) in front of a pointwise conv puts every channel of the
# conv's input on a large offset; o2 feeds a padded 3x3 conv, where the shift would not be exact
CONV = """
<ir_version: 10, opset_import: ["" : 21]>
affine (float[N,4,8,8] x) => (float[N,6,8,8] y, float[N,6,8,8] y2) {
    c1 = Conv <pads=[1,1,1,1]> (x, w1, b1)
    r1 = Relu (c1)
    s1 = Mul (r1, a)
    o1 = Add (s1, off)
    y = Conv (o1, w2, b2)
    o2 = Add (s1, off)
    y2 = Conv <pads=[1,1,1,1]> (o2, w3, b3)
}
"""

# the same offsets in front of a MatMul with a bias Add and a Gemm without C
DENSE = """
<ir_version: 10, opset_import: ["" : 21]>
dense (float[N,16] x) => (float[N,8] y, float[N,8] g) {
    h = Add (x, off)
    m = MatMul (h, w1)
    y = Add (m, b1)
    h2 = Add (off2, x)
    g = Gemm <transB=1, alpha=0.5> (h2, w2)
}
"""


def _conv_model() -> ir.Model:
    rng = np.random.default_rng(0)
    w = {
        "w1": (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32),
        "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "a": np.array([0.05], np.float32),
        "off": np.array([3.0], np.float32),
        "w2": (rng.standard_normal((6, 8, 1, 1)) * 0.3).astype(np.float32),
        "b2": (rng.standard_normal(6) * 0.1).astype(np.float32),
        "w3": (rng.standard_normal((6, 8, 3, 3)) * 0.3).astype(np.float32),
        "b3": (rng.standard_normal(6) * 0.1).astype(np.float32),
    }
    return qmodels.build(CONV, w)


def _dense_model() -> ir.Model:
    rng = np.random.default_rng(1)
    w = {
        "off": (2.0 + rng.standard_normal(16)).astype(np.float32),
        "w1": (rng.standard_normal((16, 8)) * 0.3).astype(np.float32),
        "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "off2": np.array([-4.0], np.float32),
        "w2": (rng.standard_normal((8, 16)) * 0.3).astype(np.float32),
    }
    return qmodels.build(DENSE, w)


def _feeds(model: ir.Model, seed: int) -> dict[str, np.ndarray]:
    return qmodels.calib(model, 32, seed=seed)


def test_shift_keeps_the_float_model_and_skips_padded_readers():
    model = _conv_model()
    calib = _feeds(model, 1)
    plan = Plan(mio.load_model(model), fq.QuantizeConfig(format="qdq", activation_shift=True), False)
    plan.calibrate(calib)
    notes = [n for n in plan.notes if n.startswith("activation mean shift")]
    assert len(notes) == 1 and "1 layer input(s)" in notes[0]
    held = _feeds(model, 2)
    for ref, got in zip(run_float(model, held), run_float(plan.float_model, held)):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    groups = {g.x.name: g for g in plan.groups}
    padded = groups["o2"].anchor.inputs[0].producer()
    assert {i.name for i in padded.inputs} == {"s1", "off"}  # the padded conv's input was left alone
    assert groups["o1"].anchor.inputs[0].producer().inputs[1].name != "off"


# PP-OCRv4 detector style: a depthwise conv, then a scalar affine (the Mul folds into the conv, the scalar Add is
# no bias until the shift makes it one per channel), then a pointwise conv; and a conv with a plain per-channel
# bias Add. The QDQ build bypasses a fused bias Add: the report still finds the group's output by its name
BIAS_ADD = """
<ir_version: 10, opset_import: ["" : 21]>
dwaffine (float[N,8,8,8] x) => (float[N,6,8,8] y, float[N,6,8,8] y2) {
    d = Conv <group=8, pads=[1,1,1,1]> (x, wd, bd)
    s = Mul (a, d)
    o = Add (s, off)
    y = Conv (o, w2, b2)
    c = Conv (x, w3)
    cb = Add (c, b3)
    y2 = Conv (cb, w4, b4)
}
"""


@pytest.mark.parametrize("fmt", ["qdq", "fp8ort"])
@pytest.mark.parametrize("shift", [False, True], ids=["no_shift", "shift"])
def test_report_names_the_outputs_of_groups_with_a_fused_bias_add(fmt, shift):
    rng = np.random.default_rng(3)
    w = {
        "wd": (rng.standard_normal((8, 1, 3, 3)) * 0.3).astype(np.float32),
        "bd": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "a": np.array([0.5], np.float32),
        "off": np.array([2.5], np.float32),
        "w2": (rng.standard_normal((6, 8, 1, 1)) * 0.3).astype(np.float32),
        "b2": (rng.standard_normal(6) * 0.1).astype(np.float32),
        "w3": (rng.standard_normal((8, 8, 1, 1)) * 0.3).astype(np.float32),
        "b3": (rng.standard_normal((8, 1, 1)) * 0.1).astype(np.float32),
        "w4": (rng.standard_normal((6, 8, 1, 1)) * 0.3).astype(np.float32),
        "b4": (rng.standard_normal(6) * 0.1).astype(np.float32),
    }
    model = qmodels.build(BIAS_ADD, w)
    calib, held = _feeds(model, 1), _feeds(model, 2)
    cfg = fq.QuantizeConfig(format=fmt, activation_shift=shift, keep_first_layer=False, keep_last_layer=False)
    q, rep = fq.quantize(model, calibration_data=calib, config=cfg, return_report=True)
    convs = [n for n in rep.nodes if n.op_type == "Conv"]
    assert len(convs) == 4 and all(n.status == "fp8" for n in convs), rep
    assert all(n.sqnr_db is not None and np.isfinite(n.sqnr_db) and n.sqnr_db > 15 for n in convs), rep
    assert any(n.status == "fused" and n.op_type == "Add" for n in rep.nodes)  # the per-channel bias Add
    if fmt == "qdq":
        assert "cb" in {v.name for n in q.graph for v in n.outputs}  # the bypassed bias Add's output name lives on
        for ref, got in zip(run_float(model, held), run_float(q, held)):
            assert sqnr_db(ref, got) > 20


def _sqnr(model: ir.Model, calib: dict, held: dict, shift: bool, pow2: bool = False) -> list[float]:
    cfg = fq.QuantizeConfig(format="qdq", activation_shift=shift, power_of_two_scales=pow2)
    q = fq.quantize(model, calibration_data=calib, config=cfg)
    return [sqnr_db(r, o) for r, o in zip(run_float(model, held), run_float(q, held))]


@pytest.mark.parametrize("pow2", [False, True], ids=["amax_scales", "pow2_scales"])
def test_shift_lowers_fp8_noise_of_offset_inputs(pow2):
    model = _conv_model()
    calib, held = _feeds(model, 1), _feeds(model, 2)
    off, on = _sqnr(model, calib, held, False, pow2), _sqnr(model, calib, held, True, pow2)
    assert on[0] > off[0] + 6.0, (off, on)  # the pointwise conv behind the offset
    assert abs(on[1] - off[1]) < 1e-6  # the padded conv: the same model


def test_shift_through_matmul_bias_and_gemm():
    model = _dense_model()
    calib, held = _feeds(model, 1), _feeds(model, 2)
    plan = Plan(mio.load_model(model), fq.QuantizeConfig(format="qdq", activation_shift=True), False)
    plan.calibrate(calib)
    assert any("2 layer input(s)" in n for n in plan.notes), plan.notes
    for ref, got in zip(run_float(model, held), run_float(plan.float_model, held)):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    off, on = _sqnr(model, calib, held, False), _sqnr(model, calib, held, True)
    assert all(b > a + 3.0 for a, b in zip(off, on)), (off, on)


def test_shift_gain_scores_the_emitted_scales():
    rng = np.random.default_rng(4)
    st = shift._Stats()
    st.add((3.0 + rng.standard_normal((2, 4, 6, 6)) * 0.2).astype(np.float32), 1)
    for pow2 in (False, True):
        amax = float(max(np.max(np.abs(st.lo)), np.max(np.abs(st.hi))))
        s = compute_scale(np.float32(amax), E4M3FN, pow2)
        x = st.first.astype(np.float32)
        before = np.sum((dequantize(quantize(x, s), s).astype(np.float64) - x) ** 2)
        assert shift._noise(st.first, amax, E4M3FN, pow2) == pytest.approx(before)
        assert shift.gain_db(st, E4M3FN, pow2) > shift.MIN_GAIN_DB


def test_shift_default_follows_the_accuracy_target():
    model = _conv_model()
    calib = _feeds(model, 1)
    for target, expect in ((None, False), (10.0, True)):
        plan = Plan(mio.load_model(model), fq.QuantizeConfig(format="qdq", accuracy_target_db=target), False)
        plan.calibrate(calib)
        assert any(n.startswith("activation mean shift") for n in plan.notes) is expect, (target, plan.notes)
