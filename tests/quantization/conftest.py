"""Shared fixtures of the quantizer tests: small models built from ONNX text, their float outputs."""

from __future__ import annotations

import os

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import qmodels


def session_options(library: str | None = None) -> ort.SessionOptions:
    """ORT options for running quantizer outputs: QDQ fusions off (onnxruntime 1.30/1.31 fuse FP8
    DequantizeLinear->MatMul into MatMulIntegerToFloat and reject the result), the fp8ort library if given."""
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    if library:
        so.register_custom_ops_library(library)
    return so


def run_float(model: ir.Model, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Outputs of a model through onnxruntime's CPU EP (the float model: the accuracy oracle; QDQ models too)."""
    return ort.InferenceSession(
        ir.to_proto(model).SerializeToString(), session_options(), providers=["CPUExecutionProvider"]
    ).run(None, feed)


def library_path() -> str | None:
    """libfp8ort.so if it is built (FP8ORT_LIBRARY or build/), else None."""
    import fp8ort

    for cand in (
        os.environ.get("FP8ORT_LIBRARY"),
        os.path.join(os.path.dirname(__file__), "..", "..", "build", "libfp8ort.so"),
    ):
        if cand and os.path.isfile(cand):
            return os.path.abspath(cand)
    try:
        return fp8ort.get_library_path()
    except FileNotFoundError:
        return None


@pytest.fixture
def resnetish() -> ir.Model:
    return qmodels.resnetish()


@pytest.fixture
def encoder() -> ir.Model:
    return qmodels.encoder()


@pytest.fixture(scope="module")
def torch():
    """The torch module, for the tests that export with it (skipped where it is not installed)."""
    return pytest.importorskip("torch", reason="these exports need torch (pip install torch==2.13.0)")
