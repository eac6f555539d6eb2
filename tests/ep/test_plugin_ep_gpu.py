"""fp8ort's plugin execution provider on its GPU device (skipped unless the library offers one): the com.fp8ort ops
and a quantized NHWC model through ``fp8ort.InferenceSession(device="gpu")``, data moved by the EP's data transfer
and allocators, graph capture on onnxruntime >= 1.26. GPU results are checked as in tests/gpu_ort (float32 or
wgmma accumulation: SQNR for high precision, FP8 codes one step apart at most at rounding boundaries).
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto

import fp8ort
from fp8ort import numerics as nx
from fp8ort import ops, reference

from .._util import activations, fp8_weights
from ..gpu_ort.test_cuda_ep import _abs_sum_conv, _check
from ..quantization import qmodels

EP = fp8ort.get_ep_name()


@pytest.fixture(autouse=True)
def _gpu_device(library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)
    if not any(dict(d.ep_metadata).get("fp8ort.device") == "gpu" for d in fp8ort.ep_devices()):
        pytest.skip("fp8ort's EP offers no GPU device here")


def _all_on_ep(sess) -> None:
    assert sess.placement and set(sess.placement.values()) == {EP}, sess.placement


def test_gpu_device_metadata():
    dev = fp8ort.select_device("gpu")
    meta = dict(dev.ep_metadata)
    assert meta["fp8ort.backend"] in ("cuda", "hip") and meta["fp8ort.gpu_ordinal"] == "0"
    assert meta["fp8ort.gpu_arch"].startswith(("sm_", "gfx")), meta
    assert dev.device.vendor_id in (0x10DE, 0x1002) and dev.device.type == ort.OrtHardwareDeviceType.GPU
    assert fp8ort.select_device("auto").device.type == ort.OrtHardwareDeviceType.GPU


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.FLOAT8E4M3FN])
@pytest.mark.parametrize("shape", [(1, 28, 28, 64, 64, 3, 1), (2, 17, 13, 3, 10, 7, 2)])
def test_conv_on_gpu_device(shape, out_type, layout, rng):
    """Both layouts run on the GPU device (NCHW between transposes); NCHW also with a residual."""
    n, h, w, c, m, k, stride = shape
    x = activations(rng, (n, h, w, c) if layout == "NHWC" else (n, c, h, w), 0.05, np.float32)
    wq, ws = fp8_weights(rng, (m, c, k, k))
    inputs = {
        "X": x,
        "W": wq,
        "x_scale": np.float32(0.05),
        "w_scale": ws,
        "B": rng.standard_normal(m).astype(np.float32),
    }
    attrs = dict(strides=[stride, stride], pads=[k // 2] * 4, layout=layout, activation="Relu")
    if layout == "NCHW":
        y_shape = reference.fp8_conv(**inputs, **attrs).shape
        inputs["Z"] = rng.standard_normal(y_shape).astype(np.float32)
    if nx.is_fp8(out_type):
        inputs["y_scale"] = np.float32(np.abs(reference.fp8_conv(**inputs, **attrs)).max() / 300 + 1e-3)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    abs_sum = _abs_sum_conv(inputs, attrs)
    if nx.is_fp8(out_type):
        abs_sum = abs_sum / inputs["y_scale"]
    expected = reference.fp8_conv(**inputs, output_dtype=out_type, **attrs)
    for _ in range(2):  # the second run reuses the weight packed at session creation
        _check(ops.run(sess, {"X": x})[0], expected, abs_sum=abs_sum)


@pytest.mark.parametrize("a_shape,n,trans_b", [((5, 64), 48, 0), ((3, 40, 96), 70, 1), ((256, 512), 256, 0)])
def test_matmul_on_gpu_device(a_shape, n, trans_b, rng):
    k = a_shape[-1]
    a = activations(rng, a_shape, 0.05, np.float32)
    b, bs = fp8_weights(rng, (n, k) if trans_b else (k, n), axis=0 if trans_b else 1)
    inputs = {
        "A": a,
        "B": b,
        "a_scale": np.float32(0.05),
        "b_scale": bs,
        "C": rng.standard_normal(n).astype(np.float32),
    }
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], transB=trans_b)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    qa = nx.quantize(a, inputs["a_scale"], nx.E4M3FN)
    abs_a = (qa.view(np.uint8) & 0x7F).view(qa.dtype)
    abs_b = (b.view(np.uint8) & 0x7F).view(b.dtype)
    abs_sum = reference.fp8_matmul(abs_a, abs_b, inputs["a_scale"], bs, transB=trans_b).astype(np.float64)
    _check(ops.run(sess, {"A": a})[0], reference.fp8_matmul(**inputs, transB=trans_b), abs_sum=abs_sum)


@pytest.mark.parametrize("fmt", [nx.E4M3FN, nx.E5M2], ids=str)
def test_quantize_dequantize_on_gpu_device_match_the_cpu_route(fmt, rng, library):
    scale = np.float32(0.02)
    x = activations(rng, (4, 1000), scale, np.float32)
    q = ops.make_op_model("FP8Quantize", {"X": x, "scale": scale}, output_dtype=fmt.onnx_type)
    sess = fp8ort.InferenceSession(q, device="gpu", strict=True)
    _all_on_ep(sess)
    got = ops.run(sess, {"X": x})[0]
    np.testing.assert_array_equal(got.view(np.uint8), ops.run(q, {"X": x}, library)[0].view(np.uint8))
    dq = ops.make_op_model("FP8Dequantize", {"X": got, "scale": scale})
    np.testing.assert_array_equal(
        ops.run(fp8ort.InferenceSession(dq, device="gpu", strict=True), {"X": got})[0],
        ops.run(dq, {"X": got}, library)[0],
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [nx.E4M3FN.dtype, nx.E5M2FNUZ.dtype, np.float32, np.float16], ids=str)
@pytest.mark.parametrize("channels", [None, 64], ids=["random-c", "c64"])  # c % 4 == 0: the 32-bit FP8 path
def test_max_pool_on_gpu_device_matches_the_reference(dtype, seed, channels, library):
    """FP8MaxPool on the GPU device: bit-identical to the reference (no arithmetic, only compares and copies)."""
    from ..test_cpu_kernels import max_pool_case

    rng = np.random.default_rng(3000 + seed)
    x, attrs = max_pool_case(rng, dtype)
    if channels is not None:
        x = np.concatenate([x] * channels, axis=3)[..., :channels]
    model = ops.make_op_model("FP8MaxPool", {"X": x}, **attrs)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    got = ops.run(sess, {"X": x})[0]
    want = reference.fp8_max_pool(x, **attrs)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.fixture(params=["simt", "tc", "split"])
def attention_kernel(request, monkeypatch) -> str:
    """FP8Attention's GPU kernel: on the vector units, the tensor cores' three-term TF32 split (FP8ORT_ATTENTION=tc,
    read at each launch; head sizes <= 64 on NVIDIA sm_80+, the vector units otherwise), or the vector units with the
    keys split over several blocks and merged by a second kernel (the default; FP8ORT_ATTENTION_SPLIT=off turns it off,
    read at each launch: the tests' grids are small enough for it wherever there are two 32-key tiles or more)."""
    monkeypatch.setenv("FP8ORT_ATTENTION", "simt" if request.param == "split" else request.param)
    monkeypatch.setenv("FP8ORT_ATTENTION_SPLIT", "on" if request.param == "split" else "off")
    return request.param


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2])
@pytest.mark.parametrize("head", [24, 64, 128])  # the two kernel variants (head size <= 64, <= 128)
def test_attention_on_gpu_device_matches_the_reference(head, out_type, seed, attention_kernel, library):
    """FP8Attention on the GPU device against the reference: float32 sums in another order, so float outputs agree
    within float32 rounding and FP8 outputs within one step of the format (nearly all identical); NaN rows (wholly
    masked) and zeroed rows (nan_to_zero) exactly where the reference has them. The output is poisoned first."""
    from ..test_cpu_kernels import attention_case, attention_reference

    rng = np.random.default_rng(6000 + seed)
    inputs, attrs = attention_case(rng, out_type, max_head=head, max_seq=150)  # several query tiles
    b, s, _ = inputs["Q"].shape
    t, h = inputs["K"].shape[1], attrs["num_heads"]
    d = int(rng.integers(head // 2 + 1, head + 1))  # the kernel variant's upper range, D = Dv
    inputs["Q"] = (rng.standard_normal((b, s, h * d)) * 2).astype(np.float32)
    inputs["K"] = rng.standard_normal((b, t, h * d)).astype(np.float32)
    inputs["V"] = (rng.standard_normal((b, t, h * d)) * 50).astype(np.float32)
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], output_dtype=out_type, **attrs)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    feeds = {n: inputs[n] for n in ("Q", "K", "V")}
    want = attention_reference(inputs, attrs, out_type)
    if nx.is_fp8(out_type):
        got = ops.run(sess, feeds)[0]
    else:  # Y bound to device memory holding a NaN pattern first: every element must be written
        vendor = fp8ort.select_device("gpu").device.vendor_id
        binding = sess.io_binding()
        keep = [ort.OrtValue.ortvalue_from_numpy(v, "gpu", 0, vendor) for v in feeds.values()]
        for name, v in zip(feeds, keep):
            binding.bind_ortvalue_input(name, v)
        poison = np.full(want.shape, 0x7FC00001, np.uint32).view(np.float32)
        y = ort.OrtValue.ortvalue_from_numpy(poison, "gpu", 0, vendor)
        binding.bind_ortvalue_output("Y", y)
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()
        got = y.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    w = want.astype(np.float32)
    g = got.astype(np.float32)
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN rows differ"
    ok = ~np.isnan(w)
    if nx.is_fp8(out_type):

        def ordered(a: np.ndarray) -> np.ndarray:  # sign-magnitude codes on one integer line (+0 and -0 alike)
            c = a.view(np.uint8)[ok].astype(np.int32)
            return np.where(c & 0x80, -(c & 0x7F), c & 0x7F)

        step = np.abs(ordered(want) - ordered(got))
        same = (step == 0).mean() if step.size else 1.0  # every row NaN (all masked): nothing else to compare
        assert step.max(initial=0) <= 1 and same >= 0.98, (step.max(initial=0), same)
    else:
        scale = np.abs(w[ok]).max(initial=1.0)
        assert np.abs(g[ok] - w[ok]).max(initial=0.0) <= 2e-5 * scale


def _packed_attention_case(
    rng: np.random.Generator, b: int, s: int, d: int, out_type: int, dtype, masked_from: int
) -> tuple[np.ndarray, dict, dict]:
    """A packed [B, S, 3*H*D] Q/K/V of `dtype` (three heads; V's third scaled by 50, past E4M3's range with y_scale
    0.05), a [B, 1, 1, S] mask hiding the keys from `masked_from` on (finfo.min), y_scale for an FP8 output."""
    h = 3
    qkv = rng.standard_normal((b, s, 3 * h * d)).astype(np.float32)
    qkv[..., 2 * h * d :] *= 50
    bias = np.zeros((b, 1, 1, s), np.float32)
    bias[..., masked_from:] = np.finfo(np.float32).min
    extra = {"attn_bias": bias, **({"y_scale": np.float32(0.05)} if nx.is_fp8(out_type) else {})}
    return qkv.astype(dtype), extra, {"num_heads": h}


def _packed_and_three_on_gpu(qkv: np.ndarray, extra: dict, attrs: dict, out_type: int) -> np.ndarray:
    """FP8Attention on the GPU device on the packed form and on its three thirds as separate inputs: the same bits
    (the packed form reads the same values through other row strides). Returns the packed form's output."""
    q, k, v = (np.ascontiguousarray(a) for a in np.split(qkv, 3, axis=2))
    outs = []
    for feeds in ({"Q": qkv}, {"Q": q, "K": k, "V": v}):
        model = ops.make_op_model(
            "FP8Attention", {**feeds, **extra}, graph_inputs=list(feeds), output_dtype=out_type, **attrs
        )
        sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
        _all_on_ep(sess)
        outs.append(ops.run(sess, feeds)[0])
    packed, three = outs
    assert packed.dtype == three.dtype and packed.tobytes() == three.tobytes()
    return packed


@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN])
@pytest.mark.parametrize(("b", "d"), [(2, 64), (32, 64), (3, 30), (2, 128)])  # 30: not whole 16-byte loads
def test_attention_packed_gives_the_bits_of_three_inputs(b, d, out_type, attention_kernel, library):
    """The packed form (Q, K and V side by side in one [B, S, 3*H*D] tensor, as one FP8MatMul writes them) reads the
    same values through other row strides: the same bits as the three-input form, and both near the reference."""
    from ..test_cpu_kernels import attention_reference

    rng = np.random.default_rng(6200 + b + d + out_type)
    qkv, extra, attrs = _packed_attention_case(rng, b, 77, d, out_type, np.float32, 77 // 2)
    packed = _packed_and_three_on_gpu(qkv, extra, attrs, out_type)
    want = attention_reference({"Q": qkv, **extra}, attrs, out_type)
    if nx.is_fp8(out_type):
        assert (want.view(np.uint8) == packed.view(np.uint8)).mean() >= 0.98
    else:
        assert np.abs(packed - want).max() <= 2e-5 * np.abs(want).max()


@pytest.mark.parametrize("where", ["Q", "K", "V"])
def test_attention_with_infinite_inputs_on_gpu_device(where, attention_kernel, library):
    """A few infinite elements in Q, K or V: Y as the reference has it (NaN rows where a score is +inf or NaN, keys
    whose score is -inf left out, infinite values where an infinite V meets a positive probability, the rest within
    float32 rounding). The tensor-core kernel cannot carry an infinity through its split operands, so a block that
    meets one computes its rows again on the vector units: those blocks and the others are both checked here."""
    from ..test_cpu_kernels import attention_reference

    rng = np.random.default_rng(6400 + "QKV".index(where))
    b, s, t, h, d = 2, 150, 90, 2, 64  # three query blocks per (b, h) in the tensor-core kernel, one with no infinity
    inputs = {
        "Q": (rng.standard_normal((b, s, h * d)) * 2).astype(np.float32),
        "K": rng.standard_normal((b, t, h * d)).astype(np.float32),
        "V": (rng.standard_normal((b, t, h * d)) * 50).astype(np.float32),
    }
    rows = {"Q": s, "K": t, "V": t}[where]
    for _ in range(3):
        bi, r = int(rng.integers(b)), int(rng.integers(min(rows, 100)))  # rows 100+ of Q keep their block finite
        inputs[where][bi, r, int(rng.integers(h * d))] = np.inf if rng.random() < 0.5 else -np.inf
    attrs = {"num_heads": h}
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], **attrs)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    got = ops.run(sess, inputs)[0]
    with np.errstate(invalid="ignore", over="ignore"):
        want = attention_reference(inputs, attrs, TensorProto.FLOAT)
    assert np.array_equal(np.isnan(got), np.isnan(want)), "NaN elements differ"
    assert np.array_equal(np.isposinf(got), np.isposinf(want)) and np.array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    assert np.isinf(want).any() or np.isnan(want).any(), "the case has no non-finite output: it tests nothing"
    assert np.abs(got[fin] - want[fin]).max() <= 2e-5 * np.abs(want[fin]).max()


@pytest.fixture(params=["tc", "widen"])
def attention_f16_route(request, monkeypatch) -> str:
    """FP8Attention's route for float16 Q/K/V: the tensor-core kernel, or Q, K and V widened to float32 for the float32
    kernels (FP8ORT_ATTENTION_F16=widen; the route of AMD GPUs and NVIDIA GPUs before sm_80)."""
    monkeypatch.setenv("FP8ORT_ATTENTION_F16", request.param)
    monkeypatch.delenv("FP8ORT_ATTENTION", raising=False)
    return request.param


def _run_attention_poisoned(sess, feeds: dict, shape: tuple) -> np.ndarray:
    """Run with Y bound to device memory holding a NaN pattern first: every element must be written."""
    vendor = fp8ort.select_device("gpu").device.vendor_id
    binding = sess.io_binding()
    keep = [ort.OrtValue.ortvalue_from_numpy(v, "gpu", 0, vendor) for v in feeds.values()]
    for name, v in zip(feeds, keep):
        binding.bind_ortvalue_input(name, v)
    poison = np.full(shape, 0x7FC00001, np.uint32).view(np.float32)
    y = ort.OrtValue.ortvalue_from_numpy(poison, "gpu", 0, vendor)
    binding.bind_ortvalue_output("Y", y)
    sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    return y.numpy()


def _check_attention_f16(
    got: np.ndarray, want: np.ndarray, v: np.ndarray, out_type: int, exact_p: bool, y_scale: float = 0.05
) -> None:
    """float16 Q/K/V (docs/operators.md): Y within float16 rounding of the probabilities (2^-10 of max |V|) plus
    float32 rounding, or float32 rounding alone where the probabilities are not rounded (the widened route); FP8
    outputs within that bound (in units of y_scale) plus one step of the format at the larger of the two values, and
    nearly all identical; NaN rows where the reference has them."""
    w, g = want.astype(np.float32), got.astype(np.float32)
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN rows differ"
    ok = ~np.isnan(w)
    bound = 0.0 if exact_p else 2.0**-10 * float(np.abs(v.astype(np.float32)).max(initial=0.0))
    if nx.is_fp8(out_type):
        # mantissa bits and smallest normal exponent: one step is 2^(e - mant), subnormals spaced as the smallest
        mant, emin = (3, -6) if out_type == TensorProto.FLOAT8E4M3FN else (2, -14)
        big = np.maximum(np.abs(w[ok]), np.abs(g[ok]))
        step = np.exp2(np.floor(np.log2(np.maximum(big, 2.0**emin))) - mant)
        assert (np.abs(g[ok] - w[ok]) <= bound / y_scale + step).all()
        same = (g[ok] == w[ok]).mean() if ok.any() else 1.0
        assert same >= 0.98, same
    else:
        tol = 2e-5 * np.abs(w[ok]).max(initial=1.0) + bound
        assert np.abs(g[ok] - w[ok]).max(initial=0.0) <= tol


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2])
@pytest.mark.parametrize("head", [24, 64, 128])  # the tensor-core kernel's two head-size variants
def test_attention_float16_on_gpu_device_matches_the_reference(head, out_type, seed, attention_f16_route, library):
    """FP8Attention on float16 Q, K, V (as the quantizer's projections write them) against the reference on the same
    values: fresh shapes, broadcast masks with finfo.min and -inf (wholly masked rows: NaN, or zeros with
    nan_to_zero), FP8 outputs past the format's range; float outputs written over a NaN pattern."""
    from ..test_cpu_kernels import attention_case, attention_reference

    rng = np.random.default_rng(6600 + seed)
    inputs, attrs = attention_case(rng, out_type, max_head=head, max_seq=150)
    b, s, _ = inputs["Q"].shape
    t, h = inputs["K"].shape[1], attrs["num_heads"]
    d = int(rng.integers(head // 2 + 1, head + 1))  # D = Dv in the variant's upper range
    inputs["Q"] = (rng.standard_normal((b, s, h * d)) * 2).astype(np.float16)
    inputs["K"] = rng.standard_normal((b, t, h * d)).astype(np.float16)
    inputs["V"] = (rng.standard_normal((b, t, h * d)) * 50).astype(np.float16)
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], output_dtype=out_type, **attrs)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    feeds = {n: inputs[n] for n in ("Q", "K", "V")}
    wide = {n: (x.astype(np.float32) if n in feeds else x) for n, x in inputs.items()}
    want = attention_reference(wide, attrs, out_type)
    got = ops.run(sess, feeds)[0] if nx.is_fp8(out_type) else _run_attention_poisoned(sess, feeds, want.shape)
    assert got.dtype == want.dtype and got.shape == want.shape
    _check_attention_f16(got, want, inputs["V"], out_type, attention_f16_route == "widen")


@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN])
@pytest.mark.parametrize(("b", "s", "d"), [(2, 200, 64), (32, 128, 64), (3, 77, 30), (2, 130, 128), (1, 5, 8)])
def test_attention_float16_packed_gives_the_bits_of_three_inputs(b, s, d, out_type, attention_f16_route, library):
    """float16 Q/K/V side by side in one [B, S, 3*H*D] tensor (the quantizer's packed projection) against three
    inputs: the same bits, both near the reference. S = 200: four key tiles, so both shared-memory buffers turn over;
    D = 30: element-wise tile loads; a mask on the second half of the keys."""
    from ..test_cpu_kernels import attention_reference

    rng = np.random.default_rng(6700 + b + s + d + out_type)
    qkv, extra, attrs = _packed_attention_case(rng, b, s, d, out_type, np.float16, s // 2 + 1)
    packed = _packed_and_three_on_gpu(qkv, extra, attrs, out_type)
    want = attention_reference({"Q": qkv.astype(np.float32), **extra}, attrs, out_type)
    v = np.split(qkv, 3, axis=2)[2]
    _check_attention_f16(packed, want, v, out_type, attention_f16_route == "widen")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
@pytest.mark.parametrize("cols", [None, 768], ids=["random", "c768"])  # 768: the warp-per-row kernel
@pytest.mark.parametrize("q_type", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2])
def test_layer_norm_on_gpu_device_matches_the_reference(q_type, cols, dtype, seed, library):
    """FP8LayerNormalization on the GPU device: Y within float32 rounding of the reference, Y_fp8 exactly q of the Y
    the kernel wrote; both outputs bound to device buffers holding other values first."""
    from ..test_channel_ops import check_layer_norm, layer_norm_case

    rng = np.random.default_rng(7300 + seed)
    inputs, attrs = layer_norm_case(rng, dtype, cols)
    model = ops.make_op_model("FP8LayerNormalization", inputs, output_dtype=q_type, **attrs)
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    vendor = fp8ort.select_device("gpu").device.vendor_id
    x = inputs["X"]
    y = ort.OrtValue.ortvalue_from_numpy(np.full(x.shape, np.nan, x.dtype), "gpu", 0, vendor)
    # Y_fp8 comes back to host memory (NumPy cannot fill or read FP8 device buffers); a first run on other values
    # leaves other codes in the EP's buffers, so an element the second run skipped would show
    other = (rng.standard_normal(x.shape) * 50).astype(x.dtype)
    keep = []
    for feed in (other, x):
        binding = sess.io_binding()
        keep.append(ort.OrtValue.ortvalue_from_numpy(feed, "gpu", 0, vendor))
        binding.bind_ortvalue_input("X", keep[-1])
        binding.bind_ortvalue_output("Y", y)
        binding.bind_output("Y_fp8", "cpu")
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()
    qv = binding.get_outputs()[1]
    got_y = y.numpy()
    got_q = np.frombuffer(ops._tensor_bytes(qv), np.uint8).reshape(x.shape).view(nx.get_format(q_type).dtype)
    check_layer_norm(got_y, got_q, inputs, attrs, q_type, exact=False)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("channels", [None, 16, 96], ids=["random-c", "c16", "c96"])  # the 1, 4 and 16-byte paths
@pytest.mark.parametrize("fmt", [nx.E4M3FN, nx.E5M2FNUZ], ids=str)
def test_channel_ops_on_gpu_device_match_the_reference(fmt, channels, layout, seed, library):
    """FP8GlobalAveragePool within float32 rounding of the reference (float32 sums), NaN where the reference has
    NaN; FP8ChannelMul bit-identical on every output type (two float32 products, no sum)."""
    from ..test_channel_ops import CHANNEL_MUL_OUTPUTS, channel_case

    rng = np.random.default_rng(7400 + seed)
    inputs = channel_case(rng, fmt, layout, channels)
    x = inputs["X"]
    pool = ops.make_op_model("FP8GlobalAveragePool", {"X": x, "x_scale": inputs["x_scale"]}, layout=layout)
    sess = fp8ort.InferenceSession(pool, device="gpu", strict=True)
    _all_on_ep(sess)
    got = ops.run(sess, {"X": x})[0]
    want = reference.fp8_global_average_pool(x, inputs["x_scale"], layout=layout)
    assert got.shape == want.shape and np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.abs(got[ok] - want[ok]).max(initial=0.0) <= 1e-5 * np.abs(want[ok]).max(initial=1.0)
    for out_type in CHANNEL_MUL_OUTPUTS:
        model = ops.make_op_model("FP8ChannelMul", inputs, layout=layout, output_dtype=out_type)
        sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
        _all_on_ep(sess)
        got = ops.run(sess, {"X": x})[0]
        want = reference.fp8_channel_mul(**inputs, layout=layout, output_dtype=out_type)
        assert got.dtype == want.dtype and got.shape == want.shape
        # NaN's sign bit is not part of the contract (an FNUZ NaN input has none; E4M3FN's NaN has two codes)
        nan = np.isnan(want.astype(np.float32))
        assert np.array_equal(np.isnan(got.astype(np.float32)), nan), out_type
        assert got[~nan].view(np.uint8).tobytes() == want[~nan].view(np.uint8).tobytes(), out_type


@pytest.mark.parametrize("shape", [(1, 112, 112, 32), (2, 56, 56, 144), (1, 33, 31, 6), (3, 7, 7, 1152)], ids=str)
def test_global_average_pool_slices_on_gpu_device(shape, library):
    """FP8GlobalAveragePool of few images with large H x W: the sums split over blocks (partial sums in a workspace,
    added in a fixed order) agree with the reference, and two runs give the same bits."""
    rng = np.random.default_rng(7500)
    x = nx.encode((rng.standard_normal(shape) * 100 + 20).astype(np.float32), nx.E4M3FN)
    xs = np.float32(0.02)
    model = ops.make_op_model("FP8GlobalAveragePool", {"X": x, "x_scale": xs})
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True)
    _all_on_ep(sess)
    got, again = ops.run(sess, {"X": x})[0], ops.run(sess, {"X": x})[0]
    want = reference.fp8_global_average_pool(x, xs)
    assert got.tobytes() == again.tobytes()
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_quantized_nhwc_model_on_gpu_device(rng, library):
    model = qmodels.resnetish()
    q = ir.to_proto(
        fp8ort.quantize(model, calibration_data=qmodels.calib(model, n=8), config=fp8ort.QuantizeConfig(layout="NHWC"))
    )
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp8ort.PlacementWarning)
        sess = fp8ort.InferenceSession(q, device="gpu")
    fp8_nodes = [n.name for n in q.graph.node if n.domain == fp8ort.DOMAIN]
    assert fp8_nodes and all(sess.placement[n] == EP for n in fp8_nodes)
    got = sess.run(None, {q.graph.input[0].name: x})[0]
    want = ops.run(q, {q.graph.input[0].name: x}, library)[0]
    assert nx.sqnr_db(want.astype(np.float64), got.astype(np.float64)) >= 30.0


@pytest.mark.skipif(
    tuple(int(p) for p in ort.__version__.split(".")[:2]) < (1, 26),
    reason="graph capture for plugin EPs needs onnxruntime >= 1.26",
)
def test_graph_capture_replays_with_new_inputs(rng):
    k, n = 64, 32
    a = activations(rng, (8, k), 0.05, np.float32)
    b, bs = fp8_weights(rng, (k, n), axis=1)
    inputs = {"A": a, "B": b, "a_scale": np.float32(0.05), "b_scale": bs}
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"])
    sess = fp8ort.InferenceSession(model, device="gpu", strict=True, graph_capture=True)
    vendor = sess.ep_device.device.vendor_id
    a_dev = ort.OrtValue.ortvalue_from_numpy(a, "gpu", 0, vendor)
    y_dev = ort.OrtValue.ortvalue_from_shape_and_type([8, n], np.float32, "gpu", 0, vendor)
    binding = sess.io_binding()
    binding.bind_ortvalue_input("A", a_dev)
    binding.bind_ortvalue_output("Y", y_dev)
    for i in range(4):  # warm-up, capture, replays
        a_new = activations(rng, (8, k), 0.05, np.float32)
        a_dev.update_inplace(a_new)
        sess.run_with_iobinding(binding)
        expected = reference.fp8_matmul(a_new, b, inputs["a_scale"], bs)
        assert nx.sqnr_db(expected.astype(np.float64), y_dev.numpy().astype(np.float64)) >= 40.0, f"run {i}"
