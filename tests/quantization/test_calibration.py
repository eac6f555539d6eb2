"""Calibration data in every form, the four range methods, and clear refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import qmodels
from conftest import run_float

import fp8ort.quantization as fq
from fp8ort import E4M3FN
from fp8ort.emulate import run_reference
from fp8ort.numerics import compute_scale, dequantize, quantize, sqnr_db
from fp8ort.quantization import calibration as cal
from fp8ort.quantization import model_io as mio


def _scales(model) -> dict[str, float]:
    return {
        v.name: float(v.const_value.numpy()) for v in model.graph.initializers.values() if v.name.endswith(".scale")
    }


@pytest.mark.parametrize("method", ["max", "percentile", "mse", "entropy"])
def test_methods_give_accurate_models(resnetish, method):
    calib = qmodels.calib(resnetish, 32)
    q = fq.quantize(resnetish, calibration_data=calib, config=fq.QuantizeConfig(calibration_method=method))
    feed = qmodels.calib(resnetish, 8, seed=5)
    assert sqnr_db(run_float(resnetish, feed)[0], run_reference(q, feed)[0]) > 24.0


def test_methods_clip_no_more_than_max(resnetish):
    calib = qmodels.calib(resnetish, 32)
    s_max = _scales(fq.quantize(resnetish, calibration_data=calib))
    for method in ("percentile", "mse", "entropy"):
        s = _scales(fq.quantize(resnetish, calibration_data=calib, config=fq.QuantizeConfig(calibration_method=method)))
        assert all(s[k] <= s_max[k] * 1.0001 for k in s)
    s = _scales(
        fq.quantize(
            resnetish,
            calibration_data=calib,
            config=fq.QuantizeConfig(calibration_method="percentile", percentile=90.0),
        )
    )
    assert any(s[k] < 0.9 * s_max[k] for k in s)


def test_histogram_methods_on_known_distribution():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(200_000), [60.0]]).astype(np.float32)  # one outlier
    col = cal.RangeCollector(2048)
    col.add_max("t", x)
    col.add_hist("t", x)
    assert col.amax_for("t", "max", E4M3FN, 99.99) == pytest.approx(60.0)
    p = col.amax_for("t", "percentile", E4M3FN, 99.99)
    assert 3.0 < p < 5.0  # |N(0,1)| 99.99th percentile is 3.9
    # FP8's floating grid makes clipping rarely worth it: mse and entropy keep most of the range
    assert 3.0 < col.amax_for("t", "mse", E4M3FN, 99.99) <= 60.0
    assert 3.0 < col.amax_for("t", "entropy", E4M3FN, 99.99) <= 60.0


def _measured_amax(model, calib: dict, names: list[str]) -> dict[str, np.float32]:
    got = mio.Session(mio.with_outputs(mio.load_model(model), names)).run(calib, names)
    return {n: np.float32(np.max(np.abs(got[n]))) for n in names}


@pytest.mark.parametrize("model_name", ["resnetish", "bottleneck", "encoder"])
def test_activation_scales_are_powers_of_two_when_asked(model_name):
    model = getattr(qmodels, model_name)()
    calib = qmodels.calib(model, 16)
    scales, weights = {}, {}
    for fmt in ("fp8ort", "qdq"):
        for pow2 in (True, False, None):  # None: the default (off)
            kw = {} if pow2 is None else {"power_of_two_scales": pow2}
            q = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format=fmt, **kw))
            scales[fmt, pow2] = _scales(q)
            weights[fmt, pow2] = {
                k: v.const_value.numpy() for k, v in q.graph.initializers.items() if k.endswith("w_scale")
            }
    assert scales["fp8ort", True] == scales["qdq", True] and scales["fp8ort", False] == scales["qdq", False]
    assert scales["fp8ort", None] == scales["fp8ort", False] and scales["qdq", None] == scales["qdq", False]
    names = [k.removesuffix(".scale") for k in scales["qdq", False]]
    amax = _measured_amax(model, calib, names)  # inputs, residuals, outputs (FP8 and pooled) of the FP8 ops
    assert len(names) >= 2
    for n in names:
        plain, pow2 = scales["qdq", False][f"{n}.scale"], scales["qdq", True][f"{n}.scale"]
        # the option off: amax / 448 as before (the prepared model's BatchNorm folding moves amax by an ulp)
        assert plain == pytest.approx(amax[n] / 448.0, rel=1e-6), n
        assert math.frexp(pow2)[0] == 0.5 and pow2 >= plain > pow2 / 2, (n, pow2, plain)
    for a, b in zip(weights["fp8ort", True].values(), weights["fp8ort", False].values()):
        np.testing.assert_array_equal(a, b)  # per-channel weight scales stay amax / 448


@pytest.mark.parametrize("method", ["mse", "entropy"])
def test_histogram_methods_search_the_emitted_power_of_two_scales(method):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(200_000) * 0.7, [40.0]]).astype(np.float32)
    col = cal.RangeCollector(2048)
    col.add_max("t", x)
    col.add_hist("t", x)
    t = col.amax_for("t", method, E4M3FN, 99.99, power_of_two=True)
    s = float(compute_scale(np.float32(t), E4M3FN, power_of_two=True))
    assert math.frexp(s)[0] == 0.5 and s <= float(compute_scale(np.float32(40.0), E4M3FN, power_of_two=True))
    if method == "mse":  # the error the search scores, over the same histogram: its scale beats every other power
        h = col.hist["t"].astype(np.float64)
        centers = (np.arange(2048, dtype=np.float32) + 0.5) * np.float32(40.0 / 2048)

        def err(scale: float) -> float:
            qc = dequantize(quantize(centers, np.float32(scale), E4M3FN), np.float32(scale))
            return float(np.sum(h * (centers - qc).astype(np.float64) ** 2))

        assert all(err(s) <= err(s * 2.0**k) for k in (-3, -2, -1, 1))
        plain = col.amax_for("t", method, E4M3FN, 99.99)  # the plain search's choice, rounded up afterwards
        assert err(s) <= err(float(compute_scale(np.float32(plain), E4M3FN, power_of_two=True)))


def test_all_data_forms_agree(resnetish, tmp_path):
    calib = qmodels.calib(resnetish, 16)
    path = tmp_path / "calib.npz"
    np.savez(path, **calib)

    class Reader:
        def __init__(self) -> None:
            self.items = iter([{"x": calib["x"][i : i + 8]} for i in (0, 8)])

        def get_next(self):
            return next(self.items, None)

    forms = [calib, str(path), [{"x": calib["x"][:8]}, {"x": calib["x"][8:]}], Reader()]
    scales = [_scales(fq.quantize(resnetish, calibration_data=f)) for f in forms]
    assert all(s == scales[0] for s in scales)


def test_no_data_is_refused_unless_random_asked(resnetish):
    with pytest.raises(fq.CalibrationDataError, match="random_calibration=True"):
        fq.quantize(resnetish)
    with pytest.warns(UserWarning, match="random inputs"):
        fq.quantize(resnetish, config=fq.QuantizeConfig(random_calibration=True))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"y": np.zeros((4, 3, 16, 16), np.float32)}, "lacks model input"),
        ({"x": np.zeros((4, 3, 8, 8), np.float32)}, r"shape \(4, 3, 8, 8\).*expects"),
        ({"x": np.zeros((4, 3, 16, 16), np.int64)}, "int64"),
        ([np.zeros(3)], "list must hold dicts"),
        (42, "not understood"),
        ("/nonexistent/calib.npz", "does not exist"),
    ],
)
def test_bad_calibration_data(resnetish, data, match):
    with pytest.raises(fq.CalibrationDataError, match=match):
        fq.quantize(resnetish, calibration_data=data)


def test_progress_bar_writes_to_stderr(resnetish, capsys):
    fq.quantize(resnetish, calibration_data=qmodels.calib(resnetish), progress=True)
    assert "calibrating [" in capsys.readouterr().err
