"""Calibration data in every form, the four range methods, and clear refusals."""

from __future__ import annotations

import numpy as np
import pytest
import qmodels
from conftest import run_float

import fp8ort.quantization as fq
from fp8ort import E4M3FN
from fp8ort.emulate import run_reference
from fp8ort.numerics import sqnr_db
from fp8ort.quantization import calibration as cal


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
