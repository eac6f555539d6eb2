"""Error-compensating FP8 weight rounding (GPTQ-style): the same per-channel scales, other FP8 values.

Rounding each weight to its nearest FP8 value minimizes the weight error, not the layer's output error. With the
second moment of the layer's input ``H = E[x x^T]`` (over the calibration data, per im2col patch for a Conv), the
weights of one output channel are rounded one input column at a time and each rounding error is spread over the
columns not rounded yet, along ``H^-1`` (Frantar et al., GPTQ, 2022), which lowers ``E[(W x - Wq x)^2]``. The
per-output-channel scale stays ``amax / fp8_max`` (docs/operators.md, DESIGN numerics); only the choice between the
two FP8 neighbours of a weight changes, and a compensated weight beyond the scale's range saturates as usual.

A layer keeps the nearest rounding unless the compensated one lowers its output error on the calibration inputs by
``MIN_GAIN`` (measured with ``H``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import numerics as nx
from . import model_io as mio
from .rules import Group

if TYPE_CHECKING:
    from . import calibration as cal

DAMPING = 0.01  # of the mean diagonal of H, added to its diagonal (inputs with fewer patches than columns)
MAX_ROWS = 16384  # im2col rows per layer kept for H (evenly subsampled over the calibration data)
MIN_GAIN = 0.97  # the compensated rounding must bring the output error below this fraction of the nearest one's


def _patches(x: np.ndarray, g: Group, limit: int, rng: np.random.Generator) -> np.ndarray:
    """At most ``limit`` im2col rows of ``x`` for group ``g`` (evenly drawn output positions): [groups, rows,
    C/group * kH * kW] for a Conv, [1, rows, K] for Gemm/MatMul."""
    if g.kind != "Conv":
        rows = x.reshape(-1, x.shape[-1])
        if rows.shape[0] > limit:
            rows = rows[np.sort(rng.choice(rows.shape[0], limit, replace=False))]
        return rows[None]
    conv = g.conv
    groups = int(conv.group)
    c = x.shape[1]
    kh, kw = g.weight.shape[2:]
    (sh, sw), (dh, dw) = conv.strides, conv.dilations
    t, left, b, r = conv.pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    win = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # a view: [N, C, OH, OW, kH, kW]
    n, _, oh, ow = win.shape[:4]
    pos = np.arange(n * oh * ow)
    if pos.size > limit:
        pos = np.sort(rng.choice(pos.size, limit, replace=False))
    ni, rest = np.divmod(pos, oh * ow)
    yi, xi = np.divmod(rest, ow)
    sel = win[ni, :, yi, xi]  # [R, C, kH, kW], only the drawn windows copied
    cpg = c // groups
    return sel.reshape(len(pos), groups, cpg * kh * kw).transpose(1, 0, 2)


def _weight_rows(g: Group) -> np.ndarray:
    """The weight as [groups, M/group, K] rows (one per output channel) matching ``_patches``' columns."""
    w = g.weight.astype(np.float64)
    if g.kind == "Conv":
        groups = int(g.conv.group)
        m = w.shape[0]
        return w.reshape(groups, m // groups, -1)
    return (w if g.trans_b else w.T)[None]  # [1, N, K]


def _to_layout(rows: np.ndarray, g: Group) -> np.ndarray:
    if g.kind == "Conv":
        return rows.reshape(g.weight.shape)
    w = rows[0]
    return w if g.trans_b else w.T


def _round(w: np.ndarray, s: np.ndarray, fmt: nx.FP8Format) -> np.ndarray:
    return nx.dequantize(nx.quantize(w.astype(np.float32), s, fmt), s).astype(np.float64)


def compensated(w: np.ndarray, h: np.ndarray, s: np.ndarray, fmt: nx.FP8Format) -> np.ndarray:
    """GPTQ over the columns of ``w`` [G, M, K] with ``h`` [G, K, K] and per-row scales ``s`` [G, M, 1]; returns the
    dequantized rounded weights."""
    k = w.shape[-1]
    diag = np.diagonal(h, axis1=1, axis2=2)  # [G, K]
    mean = np.mean(diag, axis=1, keepdims=True)
    # damping, and 1 on the diagonal of dead inputs (all-zero columns: their weights just round to nearest)
    add = DAMPING * np.where(mean > 0, mean, 1.0) + (diag <= 0)
    h = h + add[:, :, None] * np.eye(k)
    hinv = np.linalg.inv(h)
    u = np.linalg.cholesky(hinv).transpose(0, 2, 1)  # upper factor of H^-1
    w = w.copy()
    q = np.empty_like(w)
    for j in range(k):
        q[:, :, j] = _round(w[:, :, j : j + 1], s, fmt)[:, :, 0]
        err = (w[:, :, j] - q[:, :, j]) / u[:, j, j][:, None]  # [G, M]
        w[:, :, j + 1 :] -= err[:, :, None] * u[:, None, j, j + 1 :]
    return q


def _output_error(dw: np.ndarray, h: np.ndarray) -> float:
    """sum over rows of dw H dw^T (the mean squared output error per patch)."""
    return float(np.einsum("gmk,gkl,gml->", dw, h, dw))


def optimize_rounding(
    model, groups: list[Group], feeds: list[cal.Feed], fmt: nx.FP8Format, seed: int = 0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{group name: (FP8 weight, per-channel scale)} for the groups whose output error the compensated rounding
    lowers (the float ``model``'s inputs of each group on ``feeds`` give ``H``)."""
    names = list(dict.fromkeys(g.x.name for g in groups))
    if not groups or not feeds:
        return {}
    rng = np.random.default_rng(seed)
    sess = mio.Session(mio.with_outputs(model, names))
    per_feed = max(MAX_ROWS // max(len(feeds), 1), 1)
    hs: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    for feed in feeds:
        got = sess.run(feed, names)
        for g in groups:
            p = _patches(np.asarray(got[g.x.name], np.float32), g, per_feed, rng).astype(np.float64)
            hs[g.name] = hs.get(g.name, 0.0) + np.einsum("grk,grl->gkl", p, p)
            counts[g.name] = counts.get(g.name, 0) + p.shape[1]
    out = {}
    for g in groups:
        h = hs[g.name] / max(counts[g.name], 1)
        w = _weight_rows(g)
        from .rewrite import weight_scale  # (rewrite imports nothing from here)

        s = weight_scale(g, fmt).astype(np.float32)
        s_rows = s.reshape(w.shape[0], w.shape[1], 1)
        near = _round(w, s_rows, fmt)
        comp = compensated(w, h, s_rows, fmt)
        if _output_error(comp - w, h) >= MIN_GAIN * _output_error(near - w, h):
            continue
        wq = nx.quantize(_to_layout(comp, g).astype(np.float32), s.reshape(_channel_shape(g)), fmt)
        out[g.name] = (wq, s)
    return out


def _channel_shape(g: Group) -> list[int]:
    shape = [1] * g.weight.ndim
    shape[g.channel_axis] = -1
    return shape
