"""Accuracy-target mode: the switch (sensitivity) model, bias correction, and the search on a small model."""

from __future__ import annotations

import itertools

import numpy as np
import onnx_ir as ir
import qmodels
from conftest import run_float

import fp8ort.quantization as fq
from fp8ort.numerics import sqnr_db
from fp8ort.quantization import model_io as mio
from fp8ort.quantization import sensitivity as sens
from fp8ort.quantization.api import Plan


def _plan(model: ir.Model, calib: dict, **cfg) -> Plan:
    plan = Plan(mio.load_model(model), fq.QuantizeConfig(format="qdq", **cfg), False)
    plan.calibrate(calib)
    return plan


def test_switch_model_matches_float_and_qdq_builds(resnetish):
    calib = qmodels.calib(resnetish)
    plan = _plan(resnetish, calib)
    names = [g.name for g in plan.groups]
    sess = mio.Session(plan.build("qdq", keep_float=set(), switches=True))
    feed = {k: v[:4] for k, v in calib.items()}

    def run(on: set[str]) -> np.ndarray:
        sw = {f"{n}.fp8_switch": np.array(1.0 if n in on else 0.0, np.float32) for n in names}
        return sess.run({**feed, **sw}, ["logits"])["logits"]

    np.testing.assert_allclose(run(set()), run_float(resnetish, feed)[0], rtol=1e-5, atol=1e-5)
    plain = mio.Session(plan.build("qdq", keep_float=set())).run(feed, ["logits"])["logits"]
    np.testing.assert_allclose(run(set(names)), plain, rtol=1e-5, atol=1e-5)
    one = {names[1]}
    alone = mio.Session(plan.build("qdq", keep_float=set(names) - one)).run(feed, ["logits"])["logits"]
    np.testing.assert_allclose(run(one), alone, rtol=1e-5, atol=1e-5)


def test_bias_correction_removes_mean_shift():
    model = qmodels.resnetish(seed=3)
    calib = {k: v + 2.0 for k, v in qmodels.calib(model, 32).items()}  # inputs with a large mean
    ref = run_float(model, calib)[0]
    errs = {}
    for on in (False, True):
        q = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq", bias_correction=on))
        errs[on] = np.abs((run_float(q, calib)[0] - ref).mean(axis=0)).mean()
    assert errs[True] < 0.7 * errs[False]


def test_target_prefers_cheap_sensitive_layers(resnetish):
    calib = qmodels.calib(resnetish)
    base = fq.quantize(resnetish, calibration_data=calib, return_report=True)[1]
    target = base.output_sqnr_db["logits"] + 8.0
    q, rep = fq.quantize(
        resnetish,
        calibration_data=calib,
        return_report=True,
        config=fq.QuantizeConfig(format="qdq", accuracy_target_db=target),
    )
    assert rep.output_sqnr_db["logits"] >= target - 0.5
    assert rep.kept_in_float and rep.fp8_mac_share > 0.3
    assert any("accuracy target" in n and "kept in float" in n for n in rep.notes)
    for name in rep.kept_in_float:
        node = rep.node(name)
        assert node.status == "float" and node.sensitivity_db is not None
    # every layer left in FP8 costs less output noise per MAC than the kept ones, by the measured sensitivities
    noise = {n.name: 10 ** (-n.sensitivity_db / 10) / max(n.macs, 1) for n in rep.nodes if n.sensitivity_db is not None}
    kept = [noise[n] for n in rep.kept_in_float]
    fp8 = [noise[n.name] for n in rep.nodes if n.status == "fp8" and n.name in noise]
    assert not fp8 or max(fp8) <= max(kept)


def _worst_db(plan: Plan, model: ir.Model) -> float:
    """Worst-batch output SQNR of ``model`` against the float model on the search's own samples."""
    outs = sens.scored_outputs(plan)
    qs = mio.Session(mio.with_outputs(model, outs))
    fs = mio.Session(mio.with_outputs(plan.float_model, outs))
    worst = np.inf
    for feed in sens._spread_feeds(plan, sens.SEARCH_SAMPLES):
        ref, got = fs.run(feed, outs), qs.run(feed, outs)
        for o in outs:
            worst = min(worst, sqnr_db(ref[o], got[o]))
    return float(worst)


def test_switch_model_matches_every_mixed_build():
    """Every on/off choice of the switch model equals the real QDQ build of that choice, also where a residual
    input's producer or one of its readers stays float (the real build then keeps Z high precision)."""
    model = qmodels.bottleneck()
    calib = qmodels.calib(model, 16)
    plan = _plan(model, calib)
    names = [g.name for g in plan.groups]
    assert any(g.residual is not None for g in plan.groups)
    sess = mio.Session(plan.build("qdq", keep_float=set(), switches=True))
    out = plan.float_model.graph.outputs[0].name
    for on in itertools.chain.from_iterable(itertools.combinations(names, k) for k in range(len(names) + 1)):
        sw = {f"{n}.fp8_switch": np.array(1.0 if n in on else 0.0, np.float32) for n in names}
        got = sess.run({**calib, **sw}, [out])[out]
        real = mio.Session(plan.build("qdq", keep_float=set(names) - set(on))).run(calib, [out])[out]
        np.testing.assert_allclose(got, real, rtol=1e-5, atol=1e-5, err_msg=f"FP8 layers {on}")


def test_search_estimate_is_the_returned_model():
    """The search's own SQNR estimate of its final choice is the SQNR of the model it builds, on the same samples."""
    model = qmodels.bottleneck()
    calib = qmodels.calib(model, 32)
    base = _plan(model, calib)
    all_fp8 = _worst_db(base, base.build("qdq", keep_float=set()))
    plan = _plan(model, calib, accuracy_target_db=all_fp8 + 1.0)
    sens.search_float_layers(plan)
    assert plan.kept_for_target and plan.search_estimate_db is not None
    got = _worst_db(plan, plan.build("qdq", final=True))
    assert abs(plan.search_estimate_db - got) < 0.1, (plan.search_estimate_db, got, plan.kept_for_target)
    assert not any("inconsistency" in n for n in plan.notes), plan.notes


SOFTMAX_OLD_OPSET = """
<ir_version: 10, opset_import: ["" : 21]>
classifier (float[N,5,16] x) => (float[N,5,6] p) {
    h = MatMul (x, w)
    hb = Add (h, b)
    f = Flatten <axis=2> (hb)
    s = Softmax <axis=1> (f)
    p = Reshape (s, shape)
}
"""


def test_scored_output_is_the_logits_behind_a_flattened_softmax():
    """Opset < 13 exports write Softmax over a Flatten and Reshape the probabilities back (PP-OCR): the search scores
    the logits in front of the Softmax, not the probabilities."""
    rng = np.random.default_rng(0)
    model = qmodels.build(
        SOFTMAX_OLD_OPSET,
        {
            "w": rng.standard_normal((16, 6)).astype(np.float32),
            "b": rng.standard_normal(6).astype(np.float32),
            "shape": np.array([-1, 5, 6], np.int64),
        },
    )
    plan = _plan(model, qmodels.calib(model, 8))
    (name,) = sens.scored_outputs(plan)
    producer = {o.name: n for n in plan.float_model.graph for o in n.outputs}
    assert name != "p"
    assert producer[name].op_type == "Add"  # the logits before the Flatten (their sample axis first)
