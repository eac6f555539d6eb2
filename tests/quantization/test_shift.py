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
