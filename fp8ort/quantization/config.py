"""``QuantizeConfig``: every knob of the quantizer in one frozen dataclass, mirrored by the CLI flags."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from .. import numerics as nx
from .errors import QuantizeError

CALIBRATION_METHODS = ("max", "percentile", "mse", "entropy")
CALIBRATION_CHOICES = ("auto", *CALIBRATION_METHODS)
OP_TYPES = ("Conv", "MatMul", "Gemm")
FORMATS = ("fp8ort", "qdq")
WEIGHT_ROUNDINGS = ("nearest", "compensated")
LAYOUTS = ("AUTO", "NCHW", "NHWC")
FP8_FORMATS = ("e4m3fn", "e4m3fnuz")
METADATA_KEY = "fp8ort.quantize_config"


@dataclasses.dataclass(frozen=True)
class QuantizeConfig:
    """How ``fp8ort.quantize`` converts a float model to FP8.

    Args:
        calibration_method: how activation scales come from calibration data: ``max`` (absolute maximum),
            ``percentile`` (the ``percentile``-th percentile of ``|x|``), ``mse`` (least FP8 rounding + clipping
            error) or ``entropy`` (least KL divergence between the float and FP8 histograms). ``auto`` (default)
            is ``max``, or ``mse`` with ``accuracy_target_db`` (it met the targets of EfficientNet-Lite0 and the
            PP-OCRv4 models with more MACs in FP8 than ``max``: bench/results/accuracy.md); resolved when the
            config is made.
        percentile: percentile of ``|x|`` used by the ``percentile`` method.
        op_types: op types to quantize (``Conv``, ``MatMul``, ``Gemm``).
        exclude_op_types: op types never quantized, even if listed in ``op_types``.
        exclude_nodes: regular expressions; nodes whose name matches any of them stay in float.
        keep_first_layer: keep the first quantizable layer (in graph order) in high precision.
        keep_last_layer: keep the last quantizable layer in high precision.
        format: ``fp8ort`` (``com.fp8ort`` FP8Conv/FP8MatMul, needs the fp8ort library) or ``qdq`` (standard
            QuantizeLinear/DequantizeLinear with FP8 types, opset >= 19, runs anywhere).
        layout: ``auto`` (default: ``NHWC`` for ``format="fp8ort"``, ``NCHW`` for ``qdq``), ``NHWC`` (FP8Conv on
            channels-last data, FP8 tensors stay NHWC between ops; transposes only at the model's edges: the fast
            layout of the GPU and CPU kernels) or ``NCHW`` (FP8Conv on NCHW data; the GPU runs each conv between
            transposes, about half the throughput of NHWC on ResNet-50).
        fp8_format: ``e4m3fn`` (OCP FP8, NVIDIA sm_89+, gfx950, gfx12) or ``e4m3fnuz`` (MI300-class gfx942).
        fp8_activations: let FP8 tensors flow between consecutive FP8 ops (the producer re-quantizes to its
            consumer's scale). ``False`` keeps every activation between ops in float.
        fuse_attention: replace each multi-head attention block (Q/K/V head split, ``MatMul``, scale, mask,
            ``Softmax``, ``MatMul``, head merge; Hugging Face encoder exports) by one ``com.fp8ort.FP8Attention``
            (float32 attention, FP8 output for the out-projection with ``fp8_activations``). Format ``fp8ort``
            only; a block that does not fit stays float with its reason in the report.
        attention_float16: with ``fuse_attention``, let the FP8MatMul projections that only FP8Attention reads write
            float16 Q, K and V (``output_dtype`` FLOAT16): half the bytes, and FP16 tensor cores for the GPU's
            attention (docs/operators.md, FP8Attention). A projection whose output the calibration data saw above
            16384 in magnitude (a quarter of float16's range) keeps float32; each FP8Attention's report line says
            which type its Q, K and V have and why. ``False`` keeps float32 Q, K and V.
        accuracy_target_db: when set, keep the layers with the most output noise per MAC in float until the
            SQNR of the model's outputs against the float model on the calibration data reaches this many dB
            (per-layer sensitivity measured on the calibration data; the report lists the layers kept).
        bias_correction: fold the mean output shift caused by FP8 weight rounding (``(Wq - W) @ E[x]``, with
            ``E[x]`` per input channel from the calibration data) into the bias of each Conv/Gemm.
        activation_shift: quantize an FP8 layer input as ``x - mean`` (per channel, from the calibration data) where
            the float graph absorbs the mean exactly: the input's producer is an Add of a constant or a Conv with a
            bias, and every reader sums it without zero padding (its bias takes ``W @ mean``). No op is added.
            ``None`` (default): only with ``accuracy_target_db``, whose search measures the result (it lowers each
            shifted input's noise, but on PP-OCRv4's recognizer the all-FP8 model gets worse while the search
            keeps far fewer MACs in float; bench/results/accuracy.md).
        power_of_two_scales: round every activation scale (each scale the graph divides by: the quantized inputs,
            residuals and outputs of the FP8 ops, pooled and gated outputs included) up to a power of two, where a
            division is one exact multiply (a kernel path for it is not in this version: bench/NOTES.md, 2026-12-06;
            the outputs are the same bits either way). Calibration (``mse``, ``entropy``) and the
            activation-shift decision score the scales as emitted; per-channel weight scales stay
            ``amax / fp8_max``. Off by default: it cost 0.8-1.0 dB of output SQNR on EfficientNet-Lite0 and the
            PP-OCRv4 detector and 3.7-4.4 dB on the recognizer, whose accuracy target then keeps 80% of the MACs
            in FP8 instead of 94% (bench/results/accuracy.md).
        weight_rounding: ``nearest`` (each FP8 weight the nearest value) or ``compensated`` (GPTQ-style: each
            rounding error spread over the weights not rounded yet along the inverse input second moment, which
            lowers the layer's output error on the calibration data; same per-channel scales).
        calibration_batch_size: samples per ORT run during calibration when the model's batch is dynamic.
        random_calibration: allow quantizing without calibration data, using random inputs (warns; the
            activation scales are then meaningless for real data).
        num_bins: histogram bins for the histogram-based methods.
        report_sqnr: measure per-layer SQNR against the float model for the report.

    Example::

        cfg = fp8ort.QuantizeConfig(calibration_method="percentile", exclude_nodes=("^/stem",))
        fp8ort.quantize("resnet50.onnx", "resnet50.fp8.onnx", calibration_data="calib.npz", config=cfg)
    """

    calibration_method: str = "auto"
    percentile: float = 99.99
    op_types: tuple[str, ...] = OP_TYPES
    exclude_op_types: tuple[str, ...] = ()
    exclude_nodes: tuple[str, ...] = ()
    keep_first_layer: bool = False
    keep_last_layer: bool = False
    format: str = "fp8ort"
    layout: str = "auto"
    fp8_format: str = "e4m3fn"
    fp8_activations: bool = True
    fuse_attention: bool = True
    attention_float16: bool = True
    accuracy_target_db: float | None = None
    bias_correction: bool = True
    activation_shift: bool | None = None
    power_of_two_scales: bool = False
    weight_rounding: str = "nearest"
    calibration_batch_size: int = 8
    random_calibration: bool = False
    num_bins: int = 2048
    report_sqnr: bool = True

    def __post_init__(self) -> None:
        for name in ("op_types", "exclude_op_types", "exclude_nodes"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(value))
        _choice("calibration_method", self.calibration_method, CALIBRATION_CHOICES)
        if self.calibration_method == "auto":
            method = "mse" if self.accuracy_target_db is not None else "max"
            object.__setattr__(self, "calibration_method", method)
        _choice("format", self.format, FORMATS)
        _choice("weight_rounding", self.weight_rounding, WEIGHT_ROUNDINGS)
        _choice("layout", self.layout.upper(), LAYOUTS)
        layout = self.layout.upper()
        if layout == "AUTO":
            layout = "NHWC" if self.format == "fp8ort" else "NCHW"
        object.__setattr__(self, "layout", layout)
        fmt = nx.get_format(self.fp8_format).name
        _choice("fp8_format", fmt, FP8_FORMATS)
        object.__setattr__(self, "fp8_format", fmt)
        for op in self.op_types:
            _choice("op_types entry", op, OP_TYPES)
        if not 0.0 < self.percentile <= 100.0:
            raise QuantizeError(f"percentile must be in (0, 100], got {self.percentile}")
        if not isinstance(self.power_of_two_scales, (bool, np.bool_)):
            raise QuantizeError(f"power_of_two_scales must be True or False, got {self.power_of_two_scales!r}")
        object.__setattr__(self, "power_of_two_scales", bool(self.power_of_two_scales))
        if self.calibration_batch_size < 1:
            raise QuantizeError(f"calibration_batch_size must be >= 1, got {self.calibration_batch_size}")
        if self.format == "qdq" and self.layout == "NHWC":
            raise QuantizeError("layout='NHWC' needs format='fp8ort'; QDQ models keep the ONNX NCHW layout")

    @property
    def fp8(self) -> nx.FP8Format:
        """The FP8 format of weights and activations."""
        return nx.get_format(self.fp8_format)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON view of the config."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}

    def to_json(self) -> str:
        """JSON text stored in the quantized model's ``metadata_props``."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> QuantizeConfig:
        """Config back from :meth:`to_json` (unknown keys are an error)."""
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise QuantizeError(f"unknown QuantizeConfig fields {unknown}; known: {sorted(names)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def replace(self, **changes: Any) -> QuantizeConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise QuantizeError(f"{name} must be one of {list(allowed)}, got {value!r}")
