"""Outputs of quantized models against the float model (ORT) and against the NumPy reference semantics."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import qmodels
from conftest import library_path, run_float, session_options

import fp8ort.quantization as fq
from fp8ort.emulate import run_reference
from fp8ort.numerics import sqnr_db
from fp8ort.quantization.api import REPORT_SAMPLES

CONFIGS = {
    "default": fq.QuantizeConfig(),
    "nhwc": fq.QuantizeConfig(layout="NHWC"),
    "fnuz": fq.QuantizeConfig(fp8_format="e4m3fnuz"),
    "no-fp8-activations": fq.QuantizeConfig(fp8_activations=False),
}


def _feed(model: ir.Model, n: int = 4, seed: int = 7) -> dict[str, np.ndarray]:
    return {k: v[:n] for k, v in qmodels.calib(model, n, seed).items()}


def _ort(model: ir.Model, feed: dict, library: str | None = None) -> list[np.ndarray]:
    return ort.InferenceSession(
        ir.to_proto(model).SerializeToString(), session_options(library), providers=["CPUExecutionProvider"]
    ).run(None, feed)


@pytest.mark.parametrize("model_name", ["resnetish", "encoder"])
@pytest.mark.parametrize("cfg_name", list(CONFIGS))
def test_reference_semantics_close_to_float(model_name, cfg_name):
    model = getattr(qmodels, model_name)()
    q = fq.quantize(model, calibration_data=qmodels.calib(model), config=CONFIGS[cfg_name])
    feed = _feed(model)  # held-out inputs (another seed than the calibration data)
    for ref, got in zip(run_float(model, feed), run_reference(q, feed)):
        assert sqnr_db(ref, got) > 24.0


@pytest.mark.parametrize("model_name", ["resnetish", "encoder"])
def test_qdq_export_emulates_fp8ort_model(model_name):
    model = getattr(qmodels, model_name)()
    calib = qmodels.calib(model)
    q = fq.quantize(model, calibration_data=calib)
    qdq = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    feed = _feed(model)
    for a, b in zip(run_reference(q, feed), _ort(qdq, feed)):
        assert sqnr_db(a, b) > 60.0  # same quantization; only float32 accumulation order differs


@pytest.mark.skipif(library_path() is None, reason="libfp8ort.so is not built")
@pytest.mark.parametrize("model_name", ["resnetish", "encoder"])
@pytest.mark.parametrize("cfg_name", ["default", "nhwc", "fnuz"])
def test_library_runs_quantized_model_like_reference(model_name, cfg_name):
    model = getattr(qmodels, model_name)()
    q = fq.quantize(model, calibration_data=qmodels.calib(model), config=CONFIGS[cfg_name])
    feed = _feed(model, n=3)  # a batch size never seen in calibration (dynamic batch)
    for ref, got in zip(run_reference(q, feed), _ort(q, feed, library_path())):
        assert sqnr_db(ref, got) > 80.0


def test_report_sqnr_matches_measured(resnetish):
    calib = qmodels.calib(resnetish)
    q, rep = fq.quantize(resnetish, calibration_data=calib, return_report=True)
    first = {k: v[:REPORT_SAMPLES] for k, v in calib.items()}  # the report measures on the first samples
    measured = sqnr_db(run_float(resnetish, first)[0], run_reference(q, first)[0])
    assert abs(rep.output_sqnr_db["logits"] - measured) < 0.1
    layer = rep.node("Conv_4")
    assert layer.sqnr_db is not None and layer.sqnr_db > 15.0


def test_accuracy_target_keeps_sensitive_layers(resnetish):
    calib = qmodels.calib(resnetish)
    base = fq.quantize(resnetish, calibration_data=calib, return_report=True)[1].output_sqnr_db["logits"]
    target = base + 6.0
    q, rep = fq.quantize(
        resnetish, calibration_data=calib, return_report=True, config=fq.QuantizeConfig(accuracy_target_db=target)
    )
    assert rep.output_sqnr_db["logits"] >= target
    assert 1 <= len(rep.kept_in_float) < 5
    for name in rep.kept_in_float:
        assert rep.node(name).status == "float" and "accuracy_target_db" in rep.node(name).reason
        assert rep.node(name).sensitivity_db is not None
    assert sqnr_db(run_float(resnetish, calib)[0], run_reference(q, calib)[0]) >= target - 0.5


def test_bottleneck_reference_and_library():
    model = qmodels.bottleneck()
    q = fq.quantize(model, calibration_data=qmodels.calib(model))
    feed = _feed(model)
    got = run_reference(q, feed)[0]
    assert sqnr_db(run_float(model, feed)[0], got) > 20.0  # four FP8 layers of random weights
    if library_path():
        assert sqnr_db(got, _ort(q, feed, library_path())[0]) > 80.0
