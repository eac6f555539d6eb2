"""User-facing errors of the quantizer: each message names the problem and the fix."""

from __future__ import annotations


class QuantizeError(ValueError):
    """The model, the calibration data or the config cannot be quantized as given."""


class CalibrationDataError(QuantizeError):
    """Calibration data are missing, or do not fit the model's inputs."""


class ModelLoadError(QuantizeError):
    """The input is not a loadable ONNX model."""
