"""fp8ort's quantizer: float ONNX models to FP8 (``com.fp8ort`` ops or standard FP8 QDQ)."""

from __future__ import annotations

from .api import quantize
from .config import QuantizeConfig
from .errors import CalibrationDataError, ModelLoadError, QuantizeError
from .report import NodeReport, QuantizeReport

__all__ = [
    "CalibrationDataError",
    "ModelLoadError",
    "NodeReport",
    "QuantizeConfig",
    "QuantizeError",
    "QuantizeReport",
    "quantize",
]
