"""Error-compensating FP8 weight rounding (``fp8ort/quantization/rounding.py``): im2col patches that reproduce the
convolution, FP8 weights on the same scales, lower output error than round-to-nearest on held-out inputs."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest
import qmodels

import fp8ort.quantization as fq
from fp8ort import numerics as nx
from fp8ort.quantization import model_io as mio
from fp8ort.quantization import rounding
from fp8ort.quantization.api import Plan
from fp8ort.quantization.rewrite import weight_scale

CONVS = """
<ir_version: 10, opset_import: ["" : 21]>
convs (float[N,6,9,9] x) => (float[N,6,4,5] y) {
    a = Conv <pads=[1,2,0,1], strides=[2,2], dilations=[1,1]> (x, wa, ba)
    ra = Relu (a)
    d = Conv <pads=[1,1,1,1], group=6> (ra, wd)
    y = Conv <group=2, dilations=[2,1], pads=[2,1,2,1]> (d, wg)
}
"""


def _model(seed: int = 0) -> ir.Model:
    rng = np.random.default_rng(seed)
    return qmodels.build(
        CONVS,
        {
            "wa": (rng.standard_normal((6, 6, 3, 3)) * 0.3).astype(np.float32),
            "ba": (rng.standard_normal(6) * 0.1).astype(np.float32),
            "wd": (rng.standard_normal((6, 1, 3, 3)) * 0.5).astype(np.float32),
            "wg": (rng.standard_normal((6, 3, 3, 3)) * 0.3).astype(np.float32),
        },
    )


def _correlated(model: ir.Model, n: int, seed: int) -> dict[str, np.ndarray]:
    """Smooth (spatially correlated) inputs: where compensation pays, as in images."""
    x = qmodels.calib(model, n, seed=seed)["x"]
    return {"x": (x + np.roll(x, 1, axis=2) + np.roll(x, 1, axis=3) + 1.0).astype(np.float32)}


@pytest.mark.parametrize("index", [0, 1, 2])
def test_patches_reproduce_each_convolution(index):
    model = _model()
    feed = _correlated(model, 2, 1)
    plan = Plan(mio.load_model(model), fq.QuantizeConfig(format="qdq"), False)
    g = plan.groups[index]
    out = g.anchor.outputs[0].name
    got = mio.Session(mio.with_outputs(plan.float_model, [g.x.name, out])).run(feed, [g.x.name, out])
    y = got[out]
    if len(g.anchor.inputs) > 2 and g.anchor.inputs[2] is not None:
        y = y - g.anchor.inputs[2].const_value.numpy().reshape(1, -1, 1, 1)
    p = rounding._patches(got[g.x.name], g, 10**9, np.random.default_rng(0))  # every position, in order
    w = rounding._weight_rows(g)  # [G, M/G, K]
    conv = np.einsum("gmk,grk->gmr", w, p.astype(np.float64))  # [G, M/G, N*OH*OW]
    n, m, oh, ow = y.shape
    conv = conv.reshape(m, n, oh, ow).transpose(1, 0, 2, 3)
    np.testing.assert_allclose(conv, y, rtol=1e-4, atol=1e-4)


def test_compensated_rounding_lowers_held_out_error():
    model = _model()
    calib, held = _correlated(model, 32, 1), _correlated(model, 32, 2)
    plan = Plan(mio.load_model(model), fq.QuantizeConfig(format="qdq", weight_rounding="compensated"), False)
    plan.calibrate(calib)
    assert plan.fp8_weights and any("error compensation" in n for n in plan.notes)
    fmt = plan.config.fp8
    for g in plan.groups:
        if g.name not in plan.fp8_weights:
            continue
        wq, s = plan.fp8_weights[g.name]
        np.testing.assert_array_equal(s, weight_scale(g, fmt))  # the scales of round-to-nearest
        assert wq.dtype == fmt.dtype and wq.shape == g.weight.shape
        assert np.any(wq.view(np.uint8) != nx.quantize(g.weight, s.reshape(-1, 1, 1, 1), fmt).view(np.uint8))
    # each layer's output error from its weight rounding, on held-out inputs of that layer
    names = [g.x.name for g in plan.groups]
    xs = mio.Session(mio.with_outputs(plan.float_model, names)).run(held, names)
    rng = np.random.default_rng(0)
    for g in plan.groups:
        if g.name not in plan.fp8_weights:
            continue
        wq, s = plan.fp8_weights[g.name]
        p = rounding._patches(xs[g.x.name], g, 10**9, rng).astype(np.float64)
        h = np.einsum("grk,grl->gkl", p, p)
        near = nx.quantize(g.weight, s.reshape(-1, 1, 1, 1), fmt)
        assert _err(g, wq, s, h) < 0.9 * _err(g, near, s, h), (g.name, _err(g, wq, s, h), _err(g, near, s, h))


def _err(g, q: np.ndarray, s: np.ndarray, h: np.ndarray) -> float:
    """Output error (summed over patches) of the FP8 weight ``q`` against the float weight of group ``g``."""
    w = rounding._weight_rows(g)
    dw = nx.dequantize(q, s.reshape(-1, 1, 1, 1)).astype(np.float64).reshape(w.shape) - w
    return rounding._output_error(dw, h)
