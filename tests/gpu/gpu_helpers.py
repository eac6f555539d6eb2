"""Shared pieces of the GEMM and convolution tests: random operands, device epilogues, output checks."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
from gpu_lib import ACTIVATION_CODES, Epilogue
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import reference as ref

NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: ml_dtypes.bfloat16}
SQNR_MIN_DB = 40.0
FP8_OFF_BY_ONE_MAX_FRACTION = 0.01
# Hopper's FP8 wgmma keeps only ~14 bits while it accumulates (measured on the H200: ~78 dB SQNR with float32
# promotion every 128 of K, against 140+ dB for mma.sync). A sum that cancels to near zero can then land several
# FP8 codes away from the exact-sum reference; its error stays below this fraction of sum_k |a_k * b_k| (scaled).
WGMMA_REL_TOL_OF_ABS_SUM = 2.0**-10
# ... and more codes move by one: 1.15% were seen with fast accumulation at K = 4096 (H200, 2026-12-02).
WGMMA_OFF_MAX_FRACTION = 0.02


# (activation, activation_alpha, activation_beta) for the GPU activation tests: every activation, the parametrized ones
# also off their defaults.
ACTIVATION_SPECS = [
    ("Relu", None, None),
    ("Clip", None, None),
    ("Clip", -1.5, 2.25),
    ("Sigmoid", None, None),
    ("Silu", None, None),
    ("HardSigmoid", None, None),
    ("HardSigmoid", 0.3, 0.45),
    ("HardSwish", None, None),
    ("Gelu", None, None),
    ("GeluTanh", None, None),
]


def activation_id(spec) -> str:
    name, alpha, beta = spec
    return (name or "none") + ("" if alpha is None else f"({alpha},{beta})")


def activation_max_slope(spec) -> float:
    """max |d act / dy|: how much an accumulation error can grow through the activation (error bounds scale by it)."""
    name, alpha, beta = spec
    a, _ = ref.activation_params(name, alpha, beta)
    return {"Sigmoid": 0.25, "Silu": 1.1, "HardSigmoid": abs(a), "HardSwish": 1.5, "Gelu": 1.13, "GeluTanh": 1.13}.get(
        name, 1.0
    )


def activation_kinks(spec) -> np.ndarray:
    """Pre-activation values where the activation bends or saturates."""
    name, alpha, beta = spec
    a, b = ref.activation_params(name, alpha, beta)
    if name == "HardSigmoid":
        return np.float32([-b / a, (1 - b) / a])
    pts = {"Clip": [a, b], "HardSwish": [-3.0, 0.0, 3.0], "Sigmoid": [0.0, -12.0, 12.0]}.get(name, [0.0, -0.75, -6.0])
    return np.float32([p for p in pts if np.isfinite(p)])


def spread_for_activation(rng, probe: np.ndarray, w_scale: np.ndarray, spec, channel_axis: int):
    """(w_scale, bias) that put the pre-activation y = acc * scale + bias around the activation's kinks with a spread
    of a few units; probe is the reference output without bias for w_scale."""
    sigma = float(np.std(probe[np.isfinite(probe)])) or 1.0
    spread = 10.0 if spec[0] == "Sigmoid" else 3.0
    kinks = activation_kinks(spec)
    channels = probe.shape[channel_axis]
    bias = kinks[rng.integers(0, kinks.size, channels)] + rng.standard_normal(channels).astype(np.float32) * 0.05
    return (w_scale * np.float32(spread / sigma)).astype(np.float32), bias.astype(np.float32)


def np_dtype(onnx_type: int) -> np.dtype:
    return np.dtype(NP_OF[onnx_type]) if onnx_type in NP_OF else nx.get_format(onnx_type).dtype


def random_activation(rng: np.random.Generator, shape, fmt: nx.FP8Format, x_scale: float) -> np.ndarray:
    """float32 activations of which a few percent lie past the FP8 range (they saturate)."""
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(fmt.max * x_scale / 4)
    x.ravel()[rng.random(x.size) < 0.03] *= 8
    return x


def random_weight(rng: np.random.Generator, out_channels: int, shape, fmt: nx.FP8Format):
    """FP8 weight with per-output-channel scales (axis 0 of `shape` is the output channel)."""
    w = rng.standard_normal(shape).astype(np.float32) * rng.uniform(0.1, 3, (out_channels,) + (1,) * (len(shape) - 1))
    amax = np.abs(w).reshape(out_channels, -1).max(axis=1)
    scale = nx.compute_scale(amax, fmt)
    q = nx.quantize(w, scale.reshape((-1,) + (1,) * (len(shape) - 1)), fmt)
    return q, scale.astype(np.float32)


class EpilogueCase:
    """One epilogue configuration, both as reference keyword arguments and as a device fp8ort_epilogue."""

    def __init__(
        self,
        rng,
        rt,
        fmt,
        n_channels,
        y_shape,
        *,
        per_channel,
        bias,
        z_type,
        z_scaled,
        relu,
        y_type,
        x_scale,
        w_scale,
        activation=None,
        bias_values=None,
        y_scale=0.11,
    ):
        """``activation``: an (activation, alpha, beta) spec replacing ``relu``; ``bias_values``: the bias itself;
        ``y_scale``: Y's scale when Y is FP8 (e.g. a power of two, as the quantizer's power_of_two_scales makes)."""
        self.y_type = y_type
        self.w_scale = w_scale if per_channel else np.float32([w_scale.mean()])
        self.bias = rng.standard_normal(n_channels).astype(np.float32) * 3 if bias else None
        if bias_values is not None:
            self.bias = np.asarray(bias_values, np.float32)
        self.activation = activation if activation is not None else ("Relu" if relu else "", None, None)
        self.z = None
        self.z_scale = None
        if z_type is not None:
            zf = rng.standard_normal(y_shape).astype(np.float32) * 4
            if nx.is_fp8(z_type):
                self.z_scale = np.float32(0.05)
                self.z = nx.quantize(zf, self.z_scale, nx.get_format(z_type))
            else:
                self.z = zf.astype(NP_OF[z_type])
                self.z_scale = np.float32(0.5) if z_scaled else None
        self.y_scale = np.float32(y_scale) if nx.is_fp8(y_type) else None
        self.relu = self.activation[0] == "Relu"
        self.x_scale = np.float32(x_scale)
        name = self.activation[0]
        act_alpha, act_beta = ref.activation_params(*self.activation)  # defaults filled in: the C ABI takes values
        dev = lambda a: rt.to_device(np.ascontiguousarray(a).view(np.uint8)) if a is not None else None  # noqa: E731
        self.struct = Epilogue(
            x_scale=dev(np.float32([x_scale])),
            w_scale=dev(self.w_scale),
            w_scale_count=self.w_scale.size,
            bias=dev(self.bias),
            z=dev(self.z),
            z_type=z_type or 0,
            z_scale=dev(None if self.z_scale is None else np.float32([self.z_scale])),
            y_scale=dev(None if self.y_scale is None else np.float32([self.y_scale])),
            relu=int(self.relu),
            y_type=y_type,
            activation=0 if name in ("", "Relu") else ACTIVATION_CODES[name],
            activation_alpha=act_alpha,
            activation_beta=act_beta,
        )

    def reference_kwargs(self) -> dict:
        return dict(
            Z=self.z,
            z_scale=self.z_scale,
            y_scale=self.y_scale,
            activation=self.activation[0],
            activation_alpha=self.activation[1],
            activation_beta=self.activation[2],
            output_dtype=self.y_type,
        )


def fp8_ordinal(codes: np.ndarray) -> np.ndarray:
    """Sign-magnitude FP8 codes as integers that step by one between neighbouring values."""
    c = codes.astype(np.int32)
    return np.where(c & 0x80, -(c & 0x7F), c & 0x7F)


def _record(what: str, metric: str) -> None:
    """Append one line per checked output to $FP8ORT_TEST_STATS (the H200 run collects them)."""
    path = os.environ.get("FP8ORT_TEST_STATS")
    if path:
        with open(path, "a") as f:
            f.write(f"{what}: {metric}\n")


def check_output(
    got: np.ndarray, want: np.ndarray, y_type: int, what: str, *, abs_sum: np.ndarray | None = None
) -> str:
    """High precision: same non-finite values, SQNR >= 40 dB on the rest. FP8: equal but for a few codes off by one.

    ``abs_sum`` (kernels with reduced-precision accumulation): sum_k |a_k * b_k| per output in Y's units (FP8: divided
    by y_scale); codes more than one step off must then be within WGMMA_REL_TOL_OF_ABS_SUM of it.
    """
    if nx.is_fp8(y_type):
        fmt = nx.get_format(y_type)
        g, w = got.view(np.uint8).ravel(), want.view(np.uint8).ravel()
        diff = np.abs(fp8_ordinal(g) - fp8_ordinal(w))
        gf, wf = g.view(fmt.dtype).astype(np.float64), w.view(fmt.dtype).astype(np.float64)
        gn, wn = np.isnan(gf), np.isnan(wf)
        assert np.array_equal(gn, wn), f"{what}: NaN codes differ at {np.flatnonzero(gn != wn)[:8]}"
        frac = float(np.mean(diff != 0)) if diff.size else 0.0
        fin = ~wn
        sqnr = nx.sqnr_db(wf[fin], gf[fin]) if fin.any() else float("inf")
        metric = f"fp8 codes off {frac:.4%}, max {diff.max(initial=0)} steps, SQNR {sqnr:.1f} dB"
        _record(what, metric)
        worst = np.argmax(diff) if diff.size else 0
        far = diff > 1
        if abs_sum is not None and far.any():
            tol = WGMMA_REL_TOL_OF_ABS_SUM * abs_sum.ravel()[far]
            err = np.abs(gf[far] - wf[far])
            i = np.argmax(err - tol)
            assert np.all(err <= tol), f"{what}: {metric}; error {err[i]} > {tol[i]} (2^-10 of sum |a b|)"
        else:
            assert diff.max(initial=0) <= 1, f"{what}: {metric}; worst at {worst}: got {gf[worst]} want {wf[worst]}"
        limit = WGMMA_OFF_MAX_FRACTION if abs_sum is not None else FP8_OFF_BY_ONE_MAX_FRACTION
        assert frac <= max(limit, 2.0 / max(diff.size, 1)), f"{what}: {metric}"
        return metric
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    fin = np.isfinite(w)
    assert np.array_equal(g[~fin], w[~fin], equal_nan=True), f"{what}: non-finite values differ"
    assert np.isfinite(g[fin]).all(), f"{what}: NaN/Inf (unwritten?) at {np.flatnonzero(fin & ~np.isfinite(g))[:8]}"
    sqnr = nx.sqnr_db(w[fin], g[fin])
    _record(what, f"SQNR {sqnr:.1f} dB")
    assert sqnr >= SQNR_MIN_DB, f"{what}: SQNR {sqnr:.1f} dB < {SQNR_MIN_DB}"
    return f"SQNR {sqnr:.1f} dB"
