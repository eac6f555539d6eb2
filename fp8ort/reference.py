"""NumPy reference semantics of the ``com.fp8ort`` ops: the oracle every kernel is tested against.

Every op follows one recipe (DESIGN.md):

1. ``qx = q(X, x_scale)`` into the weight's FP8 format (or X as given when it is already FP8);
2. ``acc = sum(qx * qw)`` over the reduction: products of FP8 values summed exactly (float64 holds the exact
   sum of E4M3 products for reductions up to 2**17 terms), then rounded once to float32;
3. the float32 epilogue, in this order: ``y = acc * (x_scale * w_scale[m])``; ``y += B[m]``;
   ``y += deq(Z)`` (FP8 Z times z_scale, high-precision Z times z_scale when one is given); then the fused
   ``activation`` (below);
4. the output: ``q(y, y_scale)`` for an FP8 ``output_dtype``, else a round-to-nearest-even cast.

Because the reduction is exact, any kernel that sums exactly and follows the same float32 epilogue is
bit-identical to this reference; a kernel that accumulates in float32 differs only by its rounding.

The fused activations, exactly (``y`` float32; ``lo, hi`` / ``alpha, beta`` are ``activation_alpha``,
``activation_beta``; NaN stays NaN in every one):

- ``""``: ``y``.  ``Relu``: ``y < 0 ? 0 : y``.
- ``Clip`` (defaults 0, 6; ``lo <= hi``, ±inf allowed): ``y < lo ? lo : (y > hi ? hi : y)``.
- ``HardSigmoid`` (defaults 0.2, 0.5, finite): ``t = alpha * y`` then ``t = t + beta``, each rounded to float32 (no
  fused multiply-add), then ``t < 0 ? 0 : (t > 1 ? 1 : t)``.
- ``HardSwish``: ``y * HardSigmoid(y)`` with alpha = float32(1/6), beta = 0.5, the product rounded to float32.
- ``Sigmoid`` ``1 / (1 + exp(-y))``, ``Silu`` ``y / (1 + exp(-y))``, ``Gelu`` ``0.5 * y * (1 + erf(y / sqrt(2)))``,
  ``GeluTanh`` ``0.5 * y * (1 + tanh(sqrt(2 / pi) * (y + 0.044715 * y**3)))``: evaluated in float64 from the float32
  ``y`` and rounded once to float32 (a C++ kernel using libm may differ by one float32 ulp). Gelu is evaluated as
  ``0.5 * y * erfc(-y / sqrt(2))`` and GeluTanh as ``y / (1 + exp(-2 * sqrt(2 / pi) * (y + 0.044715 * y**3)))``:
  the same functions, without the cancellation in ``1 + erf`` / ``1 + tanh`` that leaves no correct digit for
  large negative ``y`` (libm and NumPy then disagree by millions of ulps).

Only Clip and HardSigmoid take ``activation_alpha``/``activation_beta``; for HardSwish they may be given only as its
fixed values, for every other activation they must be absent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from onnx import TensorProto

from . import numerics as nx

ACTIVATIONS = ("", "Relu", "Clip", "Sigmoid", "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh")
# (activation_alpha, activation_beta) defaults of the activations that have parameters
ACTIVATION_DEFAULTS = {"Clip": (0.0, 6.0), "HardSigmoid": (0.2, 0.5)}
HARD_SWISH_PARAMS = (float(np.float32(1.0 / 6.0)), 0.5)  # ONNX HardSwish: HardSigmoid with alpha 1/6, beta 0.5
GELU_TANH_COEFF = 0.044715
LAYOUTS = ("NCHW", "NHWC")


def _quantized_operand(x: np.ndarray, scale: np.ndarray | None, fmt: nx.FP8Format, name: str) -> np.ndarray:
    """FP8 values of an activation operand, as float64 (exact)."""
    if nx.is_fp8(x.dtype):
        return x.astype(np.float64)
    if scale is None:
        raise ValueError(f"{name} is high precision and needs its scale")
    return nx.quantize(x, scale, fmt).astype(np.float64)


def activation_params(
    activation: str, activation_alpha: float | None = None, activation_beta: float | None = None
) -> tuple[float, float]:
    """The checked float32 (alpha, beta) of ``activation``, defaults filled in; raises ValueError naming the fix."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    given = (activation_alpha, activation_beta)
    if activation == "HardSwish":
        for name, v, fixed in zip(("activation_alpha", "activation_beta"), given, HARD_SWISH_PARAMS):
            if v is not None and float(np.float32(v)) != fixed:
                raise ValueError(f"HardSwish has fixed {name}={fixed}; drop the attribute (got {v})")
        return HARD_SWISH_PARAMS
    if activation not in ACTIVATION_DEFAULTS:
        if any(v is not None for v in given):
            raise ValueError(f"activation {activation!r} takes no activation_alpha/activation_beta; drop them")
        return (0.0, 0.0)
    alpha, beta = (float(np.float32(d if v is None else v)) for v, d in zip(given, ACTIVATION_DEFAULTS[activation]))
    if activation == "Clip":
        if math.isnan(alpha) or math.isnan(beta) or alpha > beta:
            raise ValueError(f"Clip needs activation_alpha (min) <= activation_beta (max), got {alpha}, {beta}")
    elif not (math.isfinite(alpha) and math.isfinite(beta)):
        raise ValueError(f"HardSigmoid needs finite activation_alpha and activation_beta, got {alpha}, {beta}")
    return alpha, beta


def _hard_sigmoid(y: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    t = (y * np.float32(alpha)).astype(np.float32)  # two roundings: no fused multiply-add
    t = (t + np.float32(beta)).astype(np.float32)
    return np.where(t < 0, np.float32(0.0), np.where(t > 1, np.float32(1.0), t)).astype(np.float32)


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def apply_activation(
    y: np.ndarray, activation: str, activation_alpha: float | None = None, activation_beta: float | None = None
) -> np.ndarray:
    """The fused activation of FP8Conv/FP8MatMul on float32 ``y``, exactly as the module docstring defines it."""
    alpha, beta = activation_params(activation, activation_alpha, activation_beta)
    y = np.asarray(y, dtype=np.float32)
    if activation == "":
        return y
    if activation == "Relu":
        return np.where(y < 0, np.float32(0.0), y).astype(np.float32)
    if activation == "Clip":
        lo, hi = np.float32(alpha), np.float32(beta)
        return np.where(y < lo, lo, np.where(y > hi, hi, y)).astype(np.float32)
    if activation == "HardSigmoid":
        return _hard_sigmoid(y, alpha, beta)
    if activation == "HardSwish":
        with np.errstate(invalid="ignore"):  # -inf * 0 is NaN, as in C
            return (y * _hard_sigmoid(y, alpha, beta)).astype(np.float32)
    d = y.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # exp overflow gives inf; -inf * 0 gives NaN, as in C
        if activation == "Sigmoid":
            r = 1.0 / (1.0 + np.exp(-d))
        elif activation == "Silu":
            r = d / (1.0 + np.exp(-d))
        elif activation == "Gelu":  # 1 + erf(x) = erfc(-x)
            r = 0.5 * d * _ERFC(-d / math.sqrt(2.0)).astype(np.float64)
        else:  # GeluTanh; 0.5 * (1 + tanh(t)) = 1 / (1 + exp(-2t))
            t = math.sqrt(2.0 / math.pi) * (d + GELU_TANH_COEFF * (d * d * d))
            r = d / (1.0 + np.exp(-2.0 * t))
    return r.astype(np.float32)


def _epilogue(
    acc: np.ndarray,
    scale: np.ndarray,
    channel_axis: int,
    B: np.ndarray | None,
    Z: np.ndarray | None,
    z_scale: np.ndarray | None,
    y_scale: np.ndarray | None,
    activation: str,
    output_dtype: int,
    activation_alpha: float | None = None,
    activation_beta: float | None = None,
) -> np.ndarray:
    """Steps 3 and 4 of the recipe; ``acc`` is the exact float64 sum, ``scale`` is per channel float32."""
    activation_params(activation, activation_alpha, activation_beta)  # bad attributes fail before any work
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    y = (acc + 0.0).astype(np.float32)  # +0.0 makes an all-(-0) sum +0, as a kernel starting from +0 does
    y = y * scale.reshape(shape)
    if B is not None:
        y = y + np.asarray(B, dtype=np.float32).reshape(shape)
    if Z is not None:
        z = np.asarray(Z).astype(np.float32)
        if z_scale is not None:
            z = z * np.float32(np.asarray(z_scale, dtype=np.float32).reshape(()))
        elif nx.is_fp8(Z.dtype):
            raise ValueError("an FP8 residual Z needs z_scale")
        y = y + z
    y = apply_activation(y, activation, activation_alpha, activation_beta)
    if nx.is_fp8(output_dtype):
        if y_scale is None:
            raise ValueError("an FP8 output_dtype needs y_scale")
        return nx.quantize(y, y_scale, nx.get_format(output_dtype))
    with np.errstate(over="ignore"):  # float16 overflow becomes ±Inf, as in the kernels
        return y.astype(nx.onnx_to_numpy_dtype(output_dtype))


def _channel_scale(x_scale: np.ndarray, w_scale: np.ndarray, channels: int) -> np.ndarray:
    xs = np.float32(np.asarray(x_scale, dtype=np.float32).reshape(()))
    ws = np.asarray(w_scale, dtype=np.float32).reshape(-1)
    if ws.size == 1:
        ws = np.full(channels, ws[0], dtype=np.float32)
    if ws.size != channels:
        raise ValueError(f"w_scale has {ws.size} values, expected 1 or {channels}")
    return (xs * ws).astype(np.float32)


def conv_output_size(size: int, k: int, stride: int, pad_begin: int, pad_end: int, dilation: int) -> int:
    """Output extent of one spatial axis, as ONNX Conv defines it."""
    return (size + pad_begin + pad_end - dilation * (k - 1) - 1) // stride + 1


def fp8_conv(
    X: np.ndarray,
    W: np.ndarray,
    x_scale: np.ndarray,
    w_scale: np.ndarray,
    B: np.ndarray | None = None,
    Z: np.ndarray | None = None,
    z_scale: np.ndarray | None = None,
    y_scale: np.ndarray | None = None,
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    group: int = 1,
    activation: str = "",
    activation_alpha: float | None = None,
    activation_beta: float | None = None,
    layout: str = "NCHW",
    output_dtype: int = TensorProto.FLOAT,
) -> np.ndarray:
    """Reference ``com.fp8ort::FP8Conv`` (2-D). W is ``[M, C/group, kH, kW]`` in an FP8 dtype."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    fmt = nx.get_format(W.dtype)
    qx = _quantized_operand(np.asarray(X), x_scale, fmt, "X")
    if layout == "NHWC":
        qx = qx.transpose(0, 3, 1, 2)
    n, c, h, w = qx.shape
    m, cg, kh, kw = W.shape
    if c != cg * group or m % group:
        raise ValueError(f"channels do not fit: X has {c}, W is {W.shape}, group={group}")
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    oh = conv_output_size(h, kh, sh, pt, pb, dh)
    ow = conv_output_size(w, kw, sw, pl, pr, dw)
    xp = np.zeros((n, c, h + pt + pb, w + pl + pr), dtype=np.float64)
    xp[:, :, pt : pt + h, pl : pl + w] = qx
    # cols[n, c, i, j, oh, ow]: the input value under kernel tap (i, j) for each output position
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            hs, ws_ = i * dh, j * dw
            cols[:, :, i, j] = xp[:, :, hs : hs + sh * (oh - 1) + 1 : sh, ws_ : ws_ + sw * (ow - 1) + 1 : sw]
    wq = W.astype(np.float64)
    mg = m // group
    acc = np.empty((n, m, oh * ow), dtype=np.float64)
    for g in range(group):
        cg_cols = cols[:, g * cg : (g + 1) * cg].reshape(n, cg * kh * kw, oh * ow)
        wg = wq[g * mg : (g + 1) * mg].reshape(mg, cg * kh * kw)
        acc[:, g * mg : (g + 1) * mg] = np.matmul(wg, cg_cols)
    acc = acc.reshape(n, m, oh, ow)
    zz = None
    if Z is not None:
        zz = np.asarray(Z)
        if layout == "NHWC":
            zz = zz.transpose(0, 3, 1, 2)
    y = _epilogue(
        acc,
        _channel_scale(x_scale, w_scale, m),
        1,
        B,
        zz,
        z_scale,
        y_scale,
        activation,
        output_dtype,
        activation_alpha,
        activation_beta,
    )
    return np.ascontiguousarray(y.transpose(0, 2, 3, 1)) if layout == "NHWC" else y


def fp8_matmul(
    A: np.ndarray,
    B: np.ndarray,
    a_scale: np.ndarray,
    b_scale: np.ndarray,
    C: np.ndarray | None = None,
    Z: np.ndarray | None = None,
    z_scale: np.ndarray | None = None,
    y_scale: np.ndarray | None = None,
    *,
    transB: int = 0,
    activation: str = "",
    activation_alpha: float | None = None,
    activation_beta: float | None = None,
    output_dtype: int = TensorProto.FLOAT,
) -> np.ndarray:
    """Reference ``com.fp8ort::FP8MatMul``: ``A [..., K] @ B [K, N]`` (``[N, K]`` with transB=1)."""
    fmt = nx.get_format(B.dtype)
    qa = _quantized_operand(np.asarray(A), a_scale, fmt, "A")
    bq = B.astype(np.float64)
    if transB:
        bq = bq.T
    k, n = bq.shape
    if qa.shape[-1] != k:
        raise ValueError(f"A's last dimension {qa.shape[-1]} does not match K={k}")
    acc = np.matmul(qa, bq)
    return _epilogue(
        acc,
        _channel_scale(a_scale, b_scale, n),
        acc.ndim - 1,
        C,
        Z,
        z_scale,
        y_scale,
        activation,
        output_dtype,
        activation_alpha,
        activation_beta,
    )


def fp8_quantize(
    X: np.ndarray, scale: np.ndarray, *, output_dtype: int = TensorProto.FLOAT8E4M3FN, saturate: int = 1
) -> np.ndarray:
    """Reference ``com.fp8ort::FP8Quantize``: ``q(X, scale)`` (no clipping when saturate=0)."""
    xs = np.asarray(X).astype(np.float32) / np.float32(np.asarray(scale, dtype=np.float32).reshape(()))
    return nx.encode(xs.astype(np.float32), nx.get_format(output_dtype), saturate=bool(saturate))


def fp8_dequantize(X: np.ndarray, scale: np.ndarray, *, output_dtype: int = TensorProto.FLOAT) -> np.ndarray:
    """Reference ``com.fp8ort::FP8Dequantize``: ``deq(X, scale)`` cast to ``output_dtype``."""
    y = nx.dequantize(X, np.asarray(scale, dtype=np.float32).reshape(()))
    with np.errstate(over="ignore"):
        return y.astype(nx.onnx_to_numpy_dtype(output_dtype))


def pool_output_size(
    size: int, k: int, stride: int, pad_begin: int, pad_end: int, dilation: int, ceil_mode: int
) -> int:
    """Output extent of one spatial axis, as ONNX MaxPool defines it (a ceil_mode window starting in the end
    padding is dropped)."""
    span = dilation * (k - 1) + 1
    room = size + pad_begin + pad_end - span
    if room < 0:
        raise ValueError(f"the window ({span} wide with dilation) is larger than the padded input")
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def fp8_max_pool(
    X: np.ndarray,
    *,
    kernel_shape: Sequence[int],
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    ceil_mode: int = 0,
    layout: str = "NHWC",
) -> np.ndarray:
    """Reference ``com.fp8ort::FP8MaxPool``: 2-D max pooling of NHWC ``X`` (FP8, float32 or float16).

    The maximum over the window's in-bounds taps on decoded values; the output is the winning input element itself
    (an FP8 output keeps X's scale). A NaN tap makes the result NaN (the first NaN in window order); among equal
    values (-0 and +0 too) the first tap in window order (row-major over ky, kx) wins.
    """
    if layout != "NHWC":
        raise ValueError(f'layout must be "NHWC", got {layout!r}')
    X = np.asarray(X)
    if X.ndim != 4:
        raise ValueError(f"X must be 4-D NHWC, got shape {X.shape}")
    if not (nx.is_fp8(X.dtype) or X.dtype in (np.float32, np.float16)):
        raise ValueError(f"X must be FP8, float32 or float16, got {X.dtype}")
    kh, kw = kernel_shape
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(pads) < 0:
        raise ValueError("kernel_shape, strides and dilations must be >= 1 and pads >= 0")
    n, h, w, c = X.shape
    oh = pool_output_size(h, kh, sh, pt, pb, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, pl, pr, dw, ceil_mode)
    for axis, size, out, k, st, pb, d in (("row", h, oh, kh, sh, pt, dh), ("column", w, ow, kw, sw, pl, dw)):
        for o in range(out):
            if not any(0 <= o * st - pb + t * d < size for t in range(k)):
                raise ValueError(f"output {axis} {o}'s window lies wholly in the padding")
    v = X.astype(np.float32)
    y = np.empty((n, oh, ow, c), dtype=X.dtype)
    for oy in range(oh):
        for ox in range(ow):
            best = np.full((n, c), -np.inf, dtype=np.float32)
            out = np.zeros((n, c), dtype=X.dtype)
            found = np.zeros((n, c), dtype=bool)  # a tap seen (the first one always wins)
            nan = np.zeros((n, c), dtype=bool)  # a NaN seen: it stays
            for ky in range(kh):
                iy = oy * sh - pt + ky * dh
                if not 0 <= iy < h:
                    continue
                for kx in range(kw):
                    ix = ox * sw - pl + kx * dw
                    if not 0 <= ix < w:
                        continue
                    t = v[:, iy, ix]
                    take = ~nan & (~found | np.isnan(t) | (t > best))
                    best = np.where(take, t, best)
                    out = np.where(take, X[:, iy, ix], out)
                    nan |= np.isnan(t)
                    found[...] = True
            y[:, oy, ox] = out
    return y


_ATTENTION_QKV_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


def fp8_attention(
    Q: np.ndarray,
    K: np.ndarray | None,
    V: np.ndarray | None,
    attn_bias: np.ndarray | None = None,
    y_scale: np.ndarray | None = None,
    *,
    num_heads: int,
    scale: float | None = None,
    nan_to_zero: int = 0,
    output_dtype: int = TensorProto.FLOAT,
) -> np.ndarray:
    """Reference ``com.fp8ort::FP8Attention``: multi-head attention on ``[B, S, H*D]`` projections.

    ``s = (Q_h @ K_h^T) * scale + attn_bias``, ``p = softmax(s)`` over the keys (max subtracted), ``Y_h = p @ V_h``,
    heads side by side in ``Y`` ``[B, S, H*Dv]``; sums in float64, each step rounded to float32. A row whose
    probabilities are NaN gives NaN, or zeros with ``nan_to_zero=1``. FP8 ``output_dtype``: ``q(Y, y_scale)``.
    Packed form: ``K`` and ``V`` None, ``Q`` ``[B, S, 3*H*D]`` holds the three projections side by side.
    ``Q``, ``K``, ``V``: float32 or float16, one type for all three; float16 values are taken exactly (the same
    formula on the same numbers).
    """
    h = int(num_heads)
    if h < 1:
        raise ValueError(f"num_heads must be >= 1; got {h}")
    if (K is None) != (V is None):
        raise ValueError("K and V must both be given, or neither (Q packed as [B, S, 3*H*D])")
    if Q.dtype not in _ATTENTION_QKV_DTYPES:
        raise ValueError(
            f"Q has element type {Q.dtype}; Q, K and V must be float32 or float16 (all three the same type)"
        )
    if K is None:
        if Q.ndim != 3 or Q.shape[2] % (3 * h):
            raise ValueError(
                f"packed Q (K and V absent) must be 3-D [B, S, 3*H*D] with H={h}; got {Q.dtype} {list(Q.shape)}"
            )
        Q, K, V = np.split(Q, 3, axis=2)
    for name, t in (("K", K), ("V", V)):
        if t.dtype != Q.dtype:
            raise ValueError(
                f"{name} has element type {t.dtype} but Q has {Q.dtype}; Q, K and V must be float32 or float16 "
                "(all three the same type)"
            )
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        if t.ndim != 3:
            raise ValueError(f"{name} must be 3-D [B, S, hidden]; got {t.dtype} {list(t.shape)}")
    (b, s, qk), (bk, t, kk), (bv, tv, vv) = Q.shape, K.shape, V.shape
    if not b == bk == bv:
        raise ValueError(f"Q, K and V must have the same batch size; got {b}, {bk}, {bv}")
    if t != tv:
        raise ValueError(f"K and V must have the same length T; got {t} and {tv}")
    if qk != kk or qk % h or vv % h:
        raise ValueError(
            f"num_heads={h} must divide Q/K's and V's last dimensions, and Q and K must match; got {qk}, {kk}, {vv}"
        )
    d, dv = qk // h, vv // h
    sc = np.float32((1.0 / math.sqrt(d) if d else 1.0) if scale is None else scale)
    if not np.isfinite(sc):
        raise ValueError(f"scale must be finite; got {scale}")
    if nan_to_zero not in (0, 1):
        raise ValueError(f"nan_to_zero must be 0 or 1; got {nan_to_zero}")
    if output_dtype != TensorProto.FLOAT and not nx.is_fp8(output_dtype):
        raise ValueError(f"output_dtype must be FLOAT or an FP8 type; got {output_dtype}")
    qh = Q.reshape(b, s, h, d).transpose(0, 2, 1, 3).astype(np.float64)
    kh = K.reshape(b, t, h, d).transpose(0, 2, 1, 3).astype(np.float64)
    vh = V.reshape(b, t, h, dv).transpose(0, 2, 1, 3).astype(np.float64)
    with np.errstate(all="ignore"):
        scores = (qh @ kh.transpose(0, 1, 3, 2)).astype(np.float32) * sc
        if attn_bias is not None:
            bias = np.asarray(attn_bias)
            if bias.dtype != np.float32 or not 1 <= bias.ndim <= 4:
                raise ValueError(f"attn_bias must be float32 of rank 1 to 4; got {bias.dtype} {list(bias.shape)}")
            try:
                fits = np.broadcast_shapes(bias.shape, scores.shape) == scores.shape
            except ValueError:
                fits = False
            if not fits:
                raise ValueError(
                    f"attn_bias {list(bias.shape)} does not broadcast to the scores [B, H, S, T] = {list(scores.shape)}"
                )
            scores = scores + bias
        if t == 0:  # no keys: zeros, as the unfused MatMul over an empty axis
            scores = np.zeros((b, h, s, 0), np.float32)
        m = scores.max(axis=-1, keepdims=True) if t else np.zeros((b, h, s, 1), np.float32)
        e = np.exp((scores - m).astype(np.float64)).astype(np.float32)
        p = (e / e.sum(axis=-1, keepdims=True, dtype=np.float64).astype(np.float32)).astype(np.float32)
        if nan_to_zero:
            p = np.where(np.isnan(p), np.float32(0), p)
        y = (p.astype(np.float64) @ vh).astype(np.float32)
    y = np.ascontiguousarray(y.transpose(0, 2, 1, 3).reshape(b, s, h * dv))
    if nx.is_fp8(output_dtype):
        if y_scale is None:
            raise ValueError("an FP8 output_dtype needs y_scale")
        return nx.quantize(y, y_scale, nx.get_format(output_dtype))
    return y


def _positive_scalar(s: np.ndarray | None, name: str) -> np.float32:
    if s is None:
        raise ValueError(f"{name} is required")
    a = np.asarray(s)
    if a.dtype != np.float32 or a.size != 1:
        raise ValueError(f"{name} must be a float32 scalar, got {a.dtype} of shape {a.shape}")
    v = np.float32(a.reshape(()))
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {v}")
    return v


def fp8_layer_normalization(
    X: np.ndarray,
    Scale: np.ndarray,
    B: np.ndarray | None,
    y_scale: np.ndarray,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    output_dtype: int = TensorProto.FLOAT8E4M3FN,
) -> tuple[np.ndarray, np.ndarray]:
    """Reference ``com.fp8ort::FP8LayerNormalization``: ``(Y, q(Y, y_scale))`` with ``Y`` ONNX LayerNormalization.

    The statistics are float64 sums rounded to float32 (mean, then the variance about the float32 mean); each later
    step is one float32 operation: ``d = x - mean``, ``r = 1 / sqrt(var + epsilon)`` (computed in float64, rounded
    once), ``Y = d * r * Scale + B``. Kernels that sum in float32 agree within float32 rounding; ``Y_fp8`` is always
    ``q`` of the kernel's own ``Y``.
    """
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float16):
        raise ValueError(f"X must be float32 or float16, got {X.dtype}")
    rank = X.ndim
    ax = axis + rank if axis < 0 else axis
    if not 0 <= ax < rank:
        raise ValueError(f"axis {axis} is out of range for X of rank {rank}")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    norm_shape = X.shape[ax:]
    for name, t in (("Scale", Scale), ("B", B)):
        if t is None:
            continue
        t = np.asarray(t)
        if t.dtype != X.dtype or t.shape != norm_shape:
            raise ValueError(f"{name} must be {X.dtype} of shape {norm_shape}, got {t.dtype} of shape {t.shape}")
    ys = _positive_scalar(y_scale, "y_scale")
    rows = int(np.prod(X.shape[:ax], dtype=np.int64))
    n = int(np.prod(norm_shape, dtype=np.int64))
    x = X.astype(np.float32).reshape(rows, n)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = (x.astype(np.float64).sum(axis=1) / max(n, 1)).astype(np.float32)[:, None]
        d = x - mean
        var = ((d.astype(np.float64) ** 2).sum(axis=1) / max(n, 1)).astype(np.float32)[:, None]
        r = (1.0 / np.sqrt(var.astype(np.float64) + np.float64(np.float32(epsilon)))).astype(np.float32)
        y = d * r
        y = y * np.asarray(Scale).astype(np.float32).reshape(1, n)
        if B is not None:
            y = y + np.asarray(B).astype(np.float32).reshape(1, n)
    y = y.reshape(X.shape).astype(X.dtype)
    y_fp8 = nx.encode((y.astype(np.float32) / ys).astype(np.float32), nx.get_format(output_dtype), saturate=True)
    return y, y_fp8


def _fp8_4d(X: np.ndarray, layout: str) -> np.ndarray:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    X = np.asarray(X)
    if X.ndim != 4 or not nx.is_fp8(X.dtype):
        raise ValueError(f"X must be a 4-D FP8 tensor, got {X.dtype} of shape {X.shape}")
    return X


def fp8_global_average_pool(X: np.ndarray, x_scale: np.ndarray, *, layout: str = "NHWC") -> np.ndarray:
    """Reference ``com.fp8ort::FP8GlobalAveragePool``: ``float32(S / (H*W)) * x_scale`` per image and channel, S the
    exact (float64) sum of the decoded FP8 values; shape ``[N, 1, 1, C]`` (NHWC) or ``[N, C, 1, 1]`` (NCHW)."""
    X = _fp8_4d(X, layout)
    xs = _positive_scalar(x_scale, "x_scale")
    axes = (1, 2) if layout == "NHWC" else (2, 3)
    hw = X.shape[axes[0]] * X.shape[axes[1]]
    if hw == 0 and X.shape[0] * X.shape[3 if layout == "NHWC" else 1] > 0:
        raise ValueError("X has no spatial positions (H * W = 0): the mean is undefined")
    with np.errstate(invalid="ignore", divide="ignore"):
        s = X.astype(np.float64).sum(axis=axes, keepdims=True)
        m = (s / np.float64(hw)).astype(np.float32)
    return (m * xs).astype(np.float32)


def fp8_channel_mul(
    X: np.ndarray,
    x_scale: np.ndarray,
    G: np.ndarray,
    y_scale: np.ndarray | None = None,
    *,
    layout: str = "NHWC",
    output_dtype: int = TensorProto.FLOAT8E4M3FN,
) -> np.ndarray:
    """Reference ``com.fp8ort::FP8ChannelMul``: ``t = float(X) * x_scale``, ``t = t * G[n, c]`` (float32 each), then
    ``q(t, y_scale)`` for an FP8 output or a cast to float32/float16."""
    X = _fp8_4d(X, layout)
    xs = _positive_scalar(x_scale, "x_scale")
    G = np.asarray(G)
    n, c = X.shape[0], (X.shape[3] if layout == "NHWC" else X.shape[1])
    want = (n, 1, 1, c) if layout == "NHWC" else (n, c, 1, 1)
    if G.dtype != np.float32 or G.shape != want:
        raise ValueError(f"G must be float32 of shape {list(want)}, got {G.dtype} of shape {list(G.shape)}")
    with np.errstate(over="ignore", invalid="ignore"):
        t = X.astype(np.float32) * xs
        t = t * G
    if output_dtype in (TensorProto.FLOAT, TensorProto.FLOAT16):
        with np.errstate(over="ignore"):
            return t.astype(nx.onnx_to_numpy_dtype(output_dtype))
    fmt = nx.get_format(output_dtype)
    ys = _positive_scalar(y_scale, "y_scale")
    with np.errstate(over="ignore", invalid="ignore"):
        return nx.encode((t / ys).astype(np.float32), fmt, saturate=True)
