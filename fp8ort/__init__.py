"""fp8ort: FP8 inference for ONNX models through ONNX Runtime."""

from __future__ import annotations

from ._library import backend, ep_devices, get_ep_name, get_ep_names, get_library_path, register, unregister
from .numerics import E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, FP8Format, sqnr_db
from .quantization import QuantizeConfig, QuantizeReport, quantize
from .session import InferenceSession, PlacementWarning, select_device

__version__ = "0.1.0"
DOMAIN = "com.fp8ort"

__all__ = [
    "DOMAIN",
    "E4M3FN",
    "E4M3FNUZ",
    "E5M2",
    "E5M2FNUZ",
    "FP8Format",
    "InferenceSession",
    "PlacementWarning",
    "QuantizeConfig",
    "QuantizeReport",
    "backend",
    "ep_devices",
    "get_ep_name",
    "get_ep_names",
    "get_library_path",
    "quantize",
    "register",
    "select_device",
    "sqnr_db",
    "unregister",
]
