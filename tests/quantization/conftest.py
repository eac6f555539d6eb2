"""Shared fixtures of the quantizer tests: small models built from ONNX text, their float outputs."""

from __future__ import annotations

import os

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import qmodels


def run_float(model: ir.Model, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Outputs of the float model through onnxruntime (the accuracy oracle)."""
    return ort.InferenceSession(ir.to_proto(model).SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feed)


def library_path() -> str | None:
    """libfp8ort.so if it is built (FP8ORT_LIBRARY or build/), else None."""
    import fp8ort

    for cand in (os.environ.get("FP8ORT_LIBRARY"),
                 os.path.join(os.path.dirname(__file__), "..", "..", "build", "libfp8ort.so")):
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
