"""Calibration data in every accepted form, and activation-range collection (max/percentile/mse/entropy)."""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import numerics as nx
from .errors import CalibrationDataError

Feed = dict[str, np.ndarray]


class InputSpec:
    """Name, NumPy dtype and shape (None for dynamic dims) of one model input."""

    def __init__(self, name: str, dtype: np.dtype, shape: tuple[int | None, ...] | None) -> None:
        self.name, self.dtype, self.shape = name, np.dtype(dtype), shape

    def __repr__(self) -> str:
        dims = "?" if self.shape is None else "x".join("N" if d is None else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype}[{dims}]"


class ProgressBar:
    """A tiny text progress bar on stderr (no tqdm dependency)."""

    def __init__(self, total: int, label: str, enabled: bool | None = None) -> None:
        self.total, self.label, self.n, self.t0 = max(total, 1), label, 0, time.perf_counter()
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def update(self, k: int = 1) -> None:
        self.n += k
        if self.enabled:
            done = int(30 * self.n / self.total)
            dt = time.perf_counter() - self.t0
            sys.stderr.write(f"\r{self.label} [{'#' * done}{'.' * (30 - done)}] {self.n}/{self.total} {dt:.1f}s")
            if self.n >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


# ------------------------------------------------------------------------------------------- the data


def _feeds_from_arrays(arrays: dict[str, np.ndarray], specs: list[InputSpec], batch: int) -> list[Feed]:
    """Split a dict of whole-dataset arrays into feeds along axis 0 (the model's static batch if it has one)."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    spec_by = {s.name: s for s in specs}
    n = None
    for name, a in arrays.items():
        spec = spec_by.get(name)
        if spec is not None and spec.shape is not None and a.ndim == len(spec.shape) - 1:
            arrays[name] = a = a[None]
        if a.ndim == 0:
            raise CalibrationDataError(f"calibration array {name!r} is a scalar; give a batch of samples")
        n = a.shape[0] if n is None else min(n, a.shape[0])
        if spec is not None and spec.shape and isinstance(spec.shape[0], int):
            batch = spec.shape[0]
    if not arrays or not n:
        return []
    return [{k: v[i : i + batch] for k, v in arrays.items()} for i in range(0, n - n % batch or n, batch)]


def read_calibration_data(data: Any, specs: list[InputSpec], batch: int) -> list[Feed]:
    """Normalize calibration data (``.npz`` path, dict of arrays, list of dicts, ``get_next()`` reader)."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.is_file():
            raise CalibrationDataError(f"calibration data file {path} does not exist; give an .npz path")
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except Exception as exc:
            raise CalibrationDataError(
                f"{path} is not a readable .npz file ({exc}); save arrays with numpy.savez(path, input_name=array)"
            ) from exc
        return _feeds_from_arrays(arrays, specs, batch)
    if isinstance(data, dict):
        return _feeds_from_arrays(data, specs, batch)
    if hasattr(data, "get_next"):
        feeds = []
        while True:
            item = data.get_next()
            if item is None:
                break
            feeds.append(dict(item))
        return feeds
    if isinstance(data, (list, tuple)):
        if not all(isinstance(d, dict) for d in data):
            raise CalibrationDataError("a calibration list must hold dicts {input name: array}, one per batch")
        return [dict(d) for d in data]
    raise CalibrationDataError(
        f"calibration data of type {type(data).__name__} is not understood; pass an .npz path, a dict of arrays, "
        "a list of dicts, or an object with get_next() (onnxruntime CalibrationDataReader)"
    )


def random_feeds(specs: list[InputSpec], n_batches: int = 4, seed: int = 0) -> list[Feed]:
    """Random inputs (standard normal floats, small non-negative ints); dynamic dims become 1."""
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(n_batches):
        feed = {}
        for s in specs:
            if s.shape is None:
                raise CalibrationDataError(f"input {s.name} has no known rank; random calibration needs a shape")
            shape = tuple(1 if d is None else d for d in s.shape)
            if np.issubdtype(s.dtype, np.floating):
                feed[s.name] = rng.standard_normal(shape).astype(s.dtype)
            else:
                feed[s.name] = rng.integers(0, 2, shape).astype(s.dtype)
        feeds.append(feed)
    return feeds


def validate_feeds(feeds: list[Feed], specs: list[InputSpec]) -> list[Feed]:
    """Check names, ranks and static dims; cast to the model's dtypes. Errors name the input and the fix."""
    if not feeds:
        raise CalibrationDataError("the calibration data hold no samples")
    names = [s.name for s in specs]
    out = []
    for i, feed in enumerate(feeds):
        missing = [n for n in names if n not in feed]
        if missing:
            raise CalibrationDataError(
                f"calibration batch {i} lacks model input(s) {missing}; it has {sorted(feed)}; the model "
                f"expects {specs}"
            )
        extra = sorted(set(feed) - set(names))
        if extra:
            raise CalibrationDataError(f"calibration batch {i} has unknown input(s) {extra}; the model expects {specs}")
        fixed = {}
        for s in specs:
            a = np.asarray(feed[s.name])
            if s.shape is not None:
                bad = a.ndim != len(s.shape) or any(d is not None and d != ad for d, ad in zip(s.shape, a.shape))
                if bad:
                    raise CalibrationDataError(
                        f"calibration input {s.name!r} in batch {i} has shape {a.shape}, but the model expects "
                        f"{s}; reshape the data (N = any batch size)"
                    )
            if a.dtype != s.dtype:
                if np.issubdtype(a.dtype, np.floating) != np.issubdtype(s.dtype, np.floating):
                    raise CalibrationDataError(
                        f"calibration input {s.name!r} is {a.dtype}, the model expects {s.dtype}"
                    )
                a = a.astype(s.dtype)
            fixed[s.name] = a
        out.append(fixed)
    return out


def get_feeds(data: Any, specs: list[InputSpec], batch: int, allow_random: bool) -> list[Feed]:
    """Calibration feeds, or a clear refusal when there are none (random ones only when asked for)."""
    if data is None:
        if not allow_random:
            raise CalibrationDataError(
                "no calibration data: activation scales need real inputs. Pass calibration_data= (an .npz path, a "
                "dict of arrays, a list of dicts or a CalibrationDataReader), or --calibration-data on the command "
                "line; to quantize with random inputs anyway set random_calibration=True (--random-calibration)"
            )
        warnings.warn("calibrating with random inputs: activation scales will not fit real data", stacklevel=3)
        data = random_feeds(specs)
    return validate_feeds(read_calibration_data(data, specs, batch), specs)


# ----------------------------------------------------------------------------------------- the ranges


def run_collect(session: Any, feeds: list[Feed], names: list[str], fn: Any, label: str, progress: bool | None) -> None:
    """Run ``session`` over every feed and call ``fn(name, array)`` for each requested tensor."""
    bar = ProgressBar(len(feeds), label, progress)
    for feed in feeds:
        outs = session.run(feed, names)
        for name in names:
            fn(name, outs[name])
        bar.update()


class RangeCollector:
    """Absolute maxima (pass 1) and |x| histograms over [0, amax] (pass 2) for each calibrated tensor."""

    def __init__(self, num_bins: int) -> None:
        self.num_bins = num_bins
        self.amax: dict[str, float] = {}
        self.hist: dict[str, np.ndarray] = {}

    def add_max(self, name: str, a: np.ndarray) -> None:
        a = np.asarray(a, dtype=np.float32)
        finite = a[np.isfinite(a)] if not np.isfinite(a).all() else a
        m = float(np.max(np.abs(finite))) if finite.size else 0.0
        self.amax[name] = max(self.amax.get(name, 0.0), m)

    def add_hist(self, name: str, a: np.ndarray) -> None:
        top = self.amax.get(name, 0.0)
        if top <= 0:
            return
        h, _ = np.histogram(np.abs(np.asarray(a, dtype=np.float32)), bins=self.num_bins, range=(0.0, top))
        self.hist[name] = self.hist.get(name, 0) + h

    def amax_for(
        self, name: str, method: str, fmt: nx.FP8Format, percentile: float, power_of_two: bool = False
    ) -> float:
        """The range ``name``'s scale comes from; ``mse`` and ``entropy`` score each threshold with the scale
        ``compute_scale(threshold, fmt, power_of_two)`` that the emitter will make of it."""
        top = self.amax.get(name, 0.0)
        if method == "max" or top <= 0 or name not in self.hist:
            return top
        h = self.hist[name].astype(np.float64)
        if method == "percentile":
            return percentile_amax(h, top, percentile)
        if method == "mse":
            return mse_amax(h, top, fmt, power_of_two)
        return entropy_amax(h, top, fmt, power_of_two)


def _candidates(n_bins: int) -> np.ndarray:
    """Bin counts (thresholds at bin upper edges) tried by mse/entropy: dense near the top, sparse below."""
    c = np.unique(np.round(np.geomspace(max(n_bins // 64, 1), n_bins, 96)).astype(int))
    return c[c >= 1]


def percentile_amax(hist: np.ndarray, top: float, percentile: float) -> float:
    cdf = np.cumsum(hist) / max(hist.sum(), 1.0)
    idx = int(np.searchsorted(cdf, percentile / 100.0))
    return top * min(idx + 1, len(hist)) / len(hist)


def mse_amax(hist: np.ndarray, top: float, fmt: nx.FP8Format, power_of_two: bool = False) -> float:
    """Threshold with the least expected squared error (rounding inside, clipping outside) under the scale it gives
    (``power_of_two``: rounded up to a power of two, so thresholds with the same scale score alike)."""
    n = len(hist)
    centers = (np.arange(n, dtype=np.float32) + 0.5) * np.float32(top / n)
    best, best_err = top, np.inf
    for k in _candidates(n):
        t = top * k / n
        s = nx.compute_scale(np.float32(t), fmt, power_of_two)
        qc = nx.dequantize(nx.quantize(centers, s, fmt), s)
        err = float(np.sum(hist * (centers - qc).astype(np.float64) ** 2))
        if err < best_err:
            best, best_err = t, err
    return best


def entropy_amax(hist: np.ndarray, top: float, fmt: nx.FP8Format, power_of_two: bool = False) -> float:
    """Threshold with the least KL divergence KL(P || Q): P is the whole histogram of ``|x|``; Q gives each FP8
    code the mass of the bins that round to it, spread evenly over the occupied bins it represents (those up to
    the threshold), so clipped tail bins get no mass and rounding costs only what it flattens. ``power_of_two``:
    the codes come from the power-of-two scale of the threshold, and the bins up to that scale's range are inside."""
    n = len(hist)
    centers = (np.arange(n, dtype=np.float32) + 0.5) * np.float32(top / n)
    p = hist / max(hist.sum(), 1.0)
    m = p > 0
    best, best_kl = top, np.inf
    for k in _candidates(n):
        if k < 8:
            continue
        t = top * k / n
        s = nx.compute_scale(np.float32(t), fmt, power_of_two)
        if power_of_two:
            k = min(n, max(k, int(float(s) * fmt.max / top * n)))  # the bins the larger scale still covers
        codes = nx.quantize(centers, s, fmt).view(np.uint8).astype(np.int64)
        inside = (np.arange(n) < k) & m
        mass = np.bincount(codes, weights=p, minlength=256)
        occupied = np.bincount(codes, weights=inside.astype(np.float64), minlength=256)
        q = np.where(inside, mass[codes] / np.maximum(occupied[codes], 1.0), 0.0)
        kl = float(np.sum(p[m] * np.log(p[m] / np.maximum(q[m], 1e-12))))
        if kl < best_kl:
            best, best_kl = t, kl
    return best
