"""FP8Conv and FP8MatMul CPU kernels against the NumPy reference, over a matrix of shapes and attributes.

Inputs are fresh random values (a few far past the FP8 range), outputs are bound to poisoned buffers. The CPU
kernels sum FP8 products exactly, so outputs must equal the reference bit for bit (and SQNR >= 40 dB).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops, reference

from ._util import HP_TYPES, activations, assert_matches, fp8_weights, run_poisoned

F32, F16, BF16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
E4M3, E4M3FNUZ, E5M2 = TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2


@dataclasses.dataclass(frozen=True)
class ConvCase:
    n: int
    c: int
    hw: tuple
    m: int
    k: tuple
    stride: tuple = (1, 1)
    pads: tuple = (0, 0, 0, 0)
    dil: tuple = (1, 1)
    group: int = 1

    def __str__(self) -> str:
        s = f"n{self.n}c{self.c}h{self.hw[0]}w{self.hw[1]}m{self.m}k{self.k[0]}x{self.k[1]}"
        if self.stride != (1, 1):
            s += f"s{self.stride[0]}{self.stride[1]}"
        if any(self.pads):
            s += "p" + "".join(map(str, self.pads))
        if self.dil != (1, 1):
            s += f"d{self.dil[0]}{self.dil[1]}"
        if self.group != 1:
            s += f"g{self.group}"
        return s


CONV_CASES = [
    ConvCase(1, 8, (10, 10), 16, (3, 3), pads=(1, 1, 1, 1)),
    ConvCase(2, 3, (17, 13), 10, (7, 7), stride=(2, 2), pads=(3, 3, 3, 3)),  # stem-like, odd sizes
    ConvCase(1, 16, (9, 9), 24, (1, 1)),
    ConvCase(2, 12, (8, 11), 12, (3, 3), pads=(1, 1, 1, 1), group=12),  # depthwise
    ConvCase(1, 12, (7, 7), 12, (5, 5), stride=(2, 2), pads=(2, 1, 2, 1), group=12),  # depthwise, asymmetric pads
    ConvCase(1, 8, (12, 12), 16, (3, 3), pads=(2, 2, 2, 2), dil=(2, 2), group=2),  # grouped + dilated
    ConvCase(1, 20, (6, 5), 40, (3, 1), stride=(1, 2), pads=(1, 0, 1, 0), group=4),
    ConvCase(1, 5, (1, 1), 7, (1, 1)),  # tiny
    ConvCase(3, 32, (14, 14), 70, (3, 3), stride=(2, 2), pads=(1, 1, 1, 1)),  # larger, M not a tile multiple
]

# (x dtype, output dtype, bias, residual, relu, layout): a spread over the contract's options.
CONV_VARIANTS = [
    (F32, F32, True, None, True, "NCHW"),
    (F16, F16, False, F16, False, "NCHW"),
    (F32, E4M3, True, E4M3, True, "NCHW"),
    (E4M3, E4M3, True, None, True, "NHWC"),
    (BF16, F32, True, F32, True, "NHWC"),
    (F32, BF16, False, E4M3, False, "NHWC"),
    (E4M3, F16, True, F32, False, "NCHW"),
]


def _variant_id(v) -> str:
    names = {F32: "f32", F16: "f16", BF16: "bf16", E4M3: "e4m3", E4M3FNUZ: "e4m3fnuz", E5M2: "e5m2", None: "none"}
    x, out, bias, z, relu, layout = v
    return f"x{names[x]}-y{names[out]}-{'b' if bias else 'nob'}-z{names[z]}-{'relu' if relu else 'lin'}-{layout}"


def _make_tensor(rng, shape, onnx_type, scale):
    """A random input of the given type: high precision, or already quantized FP8 with ``scale``."""
    if nx.is_fp8(onnx_type):
        return nx.quantize(activations(rng, shape, scale, np.float32), scale, nx.get_format(onnx_type))
    return activations(rng, shape, scale, HP_TYPES[onnx_type])


def _add_residual_and_output_scale(rng, inputs: dict, probe: np.ndarray, z_type, out_type) -> None:
    """Adds a residual Z of the output's shape (with z_scale when FP8) and, for FP8 outputs, a y_scale."""
    if z_type is not None:
        z_scale = np.float32(rng.uniform(0.05, 0.5))
        inputs["Z"] = _make_tensor(rng, probe.shape, z_type, z_scale / 60)
        if nx.is_fp8(z_type):
            inputs["z_scale"] = z_scale
    if nx.is_fp8(out_type):
        inputs["y_scale"] = np.float32(np.abs(probe).max() / 300 + 1e-3)


def _conv_inputs(rng, case: ConvCase, variant, wfmt=nx.E4M3FN):
    x_type, out_type, bias, z_type, relu, layout = variant
    x_scale = np.float32(rng.uniform(0.01, 0.1))
    xshape = (case.n, case.c, *case.hw) if layout == "NCHW" else (case.n, *case.hw, case.c)
    x = _make_tensor(rng, xshape, x_type, x_scale)
    w, w_scale = fp8_weights(rng, (case.m, case.c // case.group, *case.k), wfmt)
    inputs = {"X": x, "W": w, "x_scale": x_scale, "w_scale": w_scale}
    if bias:
        inputs["B"] = rng.standard_normal(case.m).astype(np.float32)
    # the reference gives the output shape; residual and y_scale follow from it
    probe = reference.fp8_conv(
        x, w, x_scale, w_scale, strides=case.stride, pads=case.pads, dilations=case.dil, group=case.group, layout=layout
    )
    _add_residual_and_output_scale(rng, inputs, probe, z_type, out_type)
    attrs = dict(
        strides=list(case.stride),
        pads=list(case.pads),
        dilations=list(case.dil),
        group=case.group,
        activation="Relu" if relu else "",
        layout=layout,
    )
    return inputs, attrs, out_type


@pytest.mark.parametrize("variant", CONV_VARIANTS, ids=_variant_id)
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_fp8_conv(case, variant, rng, library):
    inputs, attrs, out_type = _conv_inputs(rng, case, variant)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    ref_kwargs = {k: v for k, v in attrs.items() if k not in ("strides",)}
    expected = reference.fp8_conv(**inputs, strides=attrs["strides"], output_dtype=out_type, **ref_kwargs)
    got = run_poisoned(model, {"X": inputs["X"]}, expected.shape, out_type, library)
    assert_matches(got, expected)


@pytest.mark.parametrize("wfmt", [nx.E4M3FNUZ, nx.E5M2], ids=str)
def test_fp8_conv_other_weight_formats(wfmt, rng, library):
    case = ConvCase(1, 6, (9, 9), 8, (3, 3), pads=(1, 1, 1, 1))
    inputs, attrs, out_type = _conv_inputs(rng, case, (F32, F32, True, None, True, "NCHW"), wfmt)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    expected = reference.fp8_conv(**inputs, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {"X": inputs["X"]}, expected.shape, out_type, library)
    assert_matches(got, expected)


def test_fp8_conv_weight_as_graph_input(rng, library):
    """W fed at run time (not an initializer) is packed per call and gives the same result."""
    case = ConvCase(2, 4, (6, 6), 9, (3, 3), pads=(1, 1, 1, 1))
    inputs, attrs, out_type = _conv_inputs(rng, case, (F32, F32, True, None, False, "NCHW"))
    model = ops.make_op_model("FP8Conv", inputs, graph_inputs=["X", "W"], output_dtype=out_type, **attrs)
    expected = reference.fp8_conv(**inputs, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {"X": inputs["X"], "W": inputs["W"]}, expected.shape, out_type, library)
    assert_matches(got, expected)


def test_fp8_conv_nan_and_inf_inputs(rng, library):
    """NaN propagates to its outputs, ±Inf saturates like any other out-of-range value."""
    case = ConvCase(1, 4, (6, 6), 8, (3, 3), pads=(1, 1, 1, 1))
    inputs, attrs, out_type = _conv_inputs(rng, case, (F32, E4M3, True, None, True, "NCHW"))
    inputs["X"][0, 1, 2, 3] = np.nan
    inputs["X"][0, 2, 4, 4] = np.inf
    inputs["X"][0, 3, 0, 0] = -np.inf
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    expected = reference.fp8_conv(**inputs, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {"X": inputs["X"]}, expected.shape, out_type, library)
    assert np.isnan(expected.astype(np.float32)).any()
    assert_matches(got, expected)


MATMUL_SHAPES = [((5, 7), 9), ((1, 64), 33), ((2, 3, 40), 17), ((130, 96), 70), ((4, 1, 8, 24), 6)]
MATMUL_VARIANTS = [
    # x, out, bias, z, relu, transB
    (F32, F32, True, None, False, 0),
    (F16, F16, True, F16, True, 1),
    (E4M3, E4M3, True, E4M3, True, 0),
    (BF16, E4M3, False, F32, False, 1),
    (F32, BF16, True, None, True, 1),
]


@pytest.mark.parametrize("variant", MATMUL_VARIANTS, ids=lambda v: _variant_id((*v[:5], f"tB{v[5]}")))
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: f"A{'x'.join(map(str, s[0]))}-N{s[1]}")
def test_fp8_matmul(shape, variant, rng, library):
    a_shape, n = shape
    x_type, out_type, bias, z_type, relu, trans_b = variant
    k = a_shape[-1]
    a_scale = np.float32(rng.uniform(0.01, 0.1))
    a = _make_tensor(rng, a_shape, x_type, a_scale)
    b, b_scale = fp8_weights(rng, (n, k) if trans_b else (k, n), axis=0 if trans_b else 1)
    inputs = {"A": a, "B": b, "a_scale": a_scale, "b_scale": b_scale}
    if bias:
        inputs["C"] = rng.standard_normal(n).astype(np.float32)
    probe = reference.fp8_matmul(a, b, a_scale, b_scale, transB=trans_b)
    _add_residual_and_output_scale(rng, inputs, probe, z_type, out_type)
    attrs = dict(transB=trans_b, activation="Relu" if relu else "")
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], output_dtype=out_type, **attrs)
    expected = reference.fp8_matmul(**inputs, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {"A": a}, expected.shape, out_type, library)
    assert_matches(got, expected)


def test_fp8_matmul_scalar_weight_scale_and_high_precision_residual_scale(rng, library):
    """w_scale of shape [1] and a z_scale on a high-precision residual (deq(Z) = Z * z_scale)."""
    a = activations(rng, (6, 10), 0.05, np.float32)
    b, _ = fp8_weights(rng, (10, 12), axis=1)
    inputs = {
        "A": a,
        "B": b,
        "a_scale": np.float32(0.05),
        "b_scale": np.array([0.01], np.float32),
        "Z": rng.standard_normal((6, 12)).astype(np.float32),
        "z_scale": np.float32(0.5),
    }
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"])
    expected = reference.fp8_matmul(**inputs)
    got = run_poisoned(model, {"A": a}, expected.shape, F32, library)
    assert_matches(got, expected)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_results_do_not_depend_on_thread_count(threads, rng, library):
    case = ConvCase(2, 16, (15, 15), 20, (3, 3), pads=(1, 1, 1, 1))
    inputs, attrs, out_type = _conv_inputs(rng, case, (F32, F32, True, None, True, "NHWC"))
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    expected = reference.fp8_conv(**inputs, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {"X": inputs["X"]}, expected.shape, out_type, library, threads=threads)
    assert_matches(got, expected)


def test_case_matrix_covers_the_contract():
    """Every attribute and dtype option of the contract appears in the matrix above."""
    assert {v[0] for v in CONV_VARIANTS} >= {F32, F16, BF16, E4M3}
    assert {v[1] for v in CONV_VARIANTS} >= {F32, F16, BF16, E4M3}
    assert {v[3] for v in CONV_VARIANTS} >= {None, F32, F16, E4M3}
    assert {v[5] for v in CONV_VARIANTS} == {"NCHW", "NHWC"}
    assert any(c.group == c.c for c in CONV_CASES) and any(1 < c.group < c.c for c in CONV_CASES)
    assert any(c.dil != (1, 1) for c in CONV_CASES) and any(c.stride != (1, 1) for c in CONV_CASES)
    assert list(itertools.chain.from_iterable(v[4:5] for v in CONV_VARIANTS)).count(True) >= 2


@pytest.mark.parametrize("fmt", list(nx.FORMATS.values()), ids=str)
def test_activation_quantization_every_special_value(fmt, library, rng):
    """X -> q(X) inside the kernels is bit-exact for ties, subnormals, ±max, overflow, Inf and NaN: Y = deq(q(A))."""
    from .test_numerics import _special_float32

    base = _special_float32()
    a_scale = np.float32(rng.uniform(0.5, 2.0))
    with np.errstate(over="ignore"):
        a = np.concatenate([base * a_scale, (rng.standard_normal(50_000) * fmt.max).astype(np.float32)])
    a = a.astype(np.float32).reshape(-1, 1)
    b = np.ones((1, 1), dtype=np.float32).astype(fmt.dtype)
    inputs = {"A": a, "B": b, "a_scale": a_scale, "b_scale": np.float32(1.0)}
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"])
    expected = reference.fp8_matmul(**inputs)
    got = run_poisoned(model, {"A": a}, expected.shape, F32, library)
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------------- FP8MaxPool

POOL_TYPES = {
    "e4m3fn": nx.E4M3FN.dtype,
    "e4m3fnuz": nx.E4M3FNUZ.dtype,
    "e5m2": nx.E5M2.dtype,
    "e5m2fnuz": nx.E5M2FNUZ.dtype,
    "f32": np.float32,
    "f16": np.float16,
}


def max_pool_case(rng: np.random.Generator, dtype) -> tuple[np.ndarray, dict]:
    """Fresh random NHWC input and attributes whose every window holds an input tap. FP8 inputs are quantized
    from values partly past the format's range (saturated), with NaN and -0 sprinkled in, as are float ones."""
    while True:
        k = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        d = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        s = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        pads = [int(rng.integers(0, k[i % 2])) for i in range(4)]
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        attrs = dict(kernel_shape=k, strides=s, pads=pads, dilations=d, ceil_mode=int(rng.integers(0, 2)))
        try:
            reference.fp8_max_pool(np.zeros(shape, np.float32), **attrs)
        except ValueError:
            continue
        break
    x = rng.standard_normal(shape).astype(np.float32) * 4
    x[rng.random(shape) < 0.05] *= 1e4  # past the FP8 range: saturates
    x[rng.random(shape) < 0.03] = np.nan
    x[rng.random(shape) < 0.05] = -0.0
    x[rng.random(shape) < 0.05] = 0.0
    if nx.is_fp8(np.dtype(dtype)):
        fmt = nx.get_format(np.dtype(dtype))
        return nx.quantize(x, np.float32(1.0), fmt), attrs
    with np.errstate(over="ignore"):  # float16: +-inf past its range
        return x.astype(dtype), attrs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", list(POOL_TYPES.values()), ids=list(POOL_TYPES))
def test_fp8_max_pool(dtype, seed, library):
    """Bit-exact with the reference (NaN, -0 and ties included) on fresh shapes, pads, strides, dilations."""
    rng = np.random.default_rng(1000 + seed)
    x, attrs = max_pool_case(rng, dtype)
    want = reference.fp8_max_pool(x, **attrs)
    model = ops.make_op_model("FP8MaxPool", {"X": x}, **attrs)
    got = run_poisoned(model, {"X": x}, want.shape, ops.onnx_type_of(want), library)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes(), f"{np.count_nonzero(got.view(np.uint8) != want.view(np.uint8))} bytes"


def test_fp8_max_pool_nan_and_signed_zero_rules(library):
    """A NaN tap wins its window; between -0 and +0 the first tap in window order wins."""
    x = np.array([[[[-0.0], [0.0]], [[0.0], [-0.0]]]], np.float32)  # NHWC 1x2x2x1
    x8 = nx.quantize(x, np.float32(1.0), nx.E4M3FN)
    for v in (x, x8):
        row = ops.run(ops.make_op_model("FP8MaxPool", {"X": v}, kernel_shape=[1, 2]), {"X": v})[0]
        assert np.signbit(row.astype(np.float32).reshape(-1)).tolist() == [True, False]
    y = np.array([[[[1.0], [np.nan]], [[5.0], [2.0]]]], np.float32)
    for v in (y, nx.quantize(y, np.float32(1.0), nx.E4M3FN)):
        got = ops.run(ops.make_op_model("FP8MaxPool", {"X": v}, kernel_shape=[2, 2]), {"X": v})[0]
        assert np.isnan(got.astype(np.float32)).all()


# ---------------------------------------------------------------------------------------------- FP8Attention

ATTENTION_OUTPUTS = {"f32": TensorProto.FLOAT, "e4m3fn": TensorProto.FLOAT8E4M3FN, "e5m2": TensorProto.FLOAT8E5M2}


def attention_case(
    rng: np.random.Generator, out_type: int, max_head: int = 24, max_seq: int = 20, packed: bool = False
) -> tuple[dict, dict]:
    """Fresh random Q, K, V (some heads with large values so that an FP8 output saturates), an additive mask of a
    random broadcast shape (rank 1 to 4) with finfo.min and -inf entries (a few rows wholly masked: NaN rows), and
    random attributes. Returns (inputs, attributes). ``packed``: self-attention shapes (T = S, Dv = D) with the
    three projections side by side in Q (``[B, S, 3*H*D]``) and no K, V."""
    b, s, t, h = (
        int(rng.integers(1, 4)),
        int(rng.integers(1, max_seq)),
        int(rng.integers(1, 70)),
        int(rng.integers(1, 4)),
    )
    d = int(rng.integers(1, max_head + 1))
    dv = d if rng.random() < 0.7 else int(rng.integers(1, max_head + 1))
    if packed:
        t, dv = s, d
    q = (rng.standard_normal((b, s, h * d)) * 2).astype(np.float32)
    k = rng.standard_normal((b, t, h * d)).astype(np.float32)
    v = (rng.standard_normal((b, t, h * dv)) * 50).astype(np.float32)  # |Y| past E4M3's 448 with y_scale 0.05
    inputs: dict = {"Q": q, "K": k, "V": v}
    attrs: dict = {"num_heads": h, "nan_to_zero": int(rng.integers(0, 2))}
    if rng.random() < 0.5:
        attrs["scale"] = float(rng.uniform(0.05, 1.0))
    if rng.random() < 0.8:
        full = [b, h, s, t]
        rank = int(rng.integers(1, 5))
        shape = [full[4 - rank + i] if rng.random() < 0.6 else 1 for i in range(rank)]
        shape[-1] = t if rng.random() < 0.8 else 1
        bias = (rng.standard_normal(shape) * 3).astype(np.float32)
        bias[rng.random(shape) < 0.2] = np.finfo(np.float32).min
        bias[rng.random(shape) < 0.05] = -np.inf
        if rank >= 2 and shape[-1] == t and rng.random() < 0.5:
            bias[..., 0, :] = -np.inf  # a wholly masked row: NaN probabilities
        inputs["attn_bias"] = bias
    if nx.is_fp8(out_type):
        inputs["y_scale"] = np.float32(0.05)
    if packed:
        inputs["Q"] = np.concatenate([inputs["Q"], inputs.pop("K"), inputs.pop("V")], axis=2)
    return inputs, attrs


def attention_reference(inputs: dict, attrs: dict, out_type: int) -> np.ndarray:
    q, k, v = inputs["Q"], inputs.get("K"), inputs.get("V")
    bias, y_scale = inputs.get("attn_bias"), inputs.get("y_scale")
    return reference.fp8_attention(q, k, v, bias, y_scale, output_dtype=out_type, **attrs)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("out", list(ATTENTION_OUTPUTS), ids=list(ATTENTION_OUTPUTS))
def test_fp8_attention(out, seed, library):
    """Bit-exact with the reference (the CPU kernel rounds where the reference does; its double sums differ only
    in order) on fresh shapes, broadcast masks, wholly masked rows (NaN, or zeros with nan_to_zero) and saturating
    FP8 outputs; the output buffer is poisoned first."""
    out_type = ATTENTION_OUTPUTS[out]
    inputs, attrs = attention_case(np.random.default_rng(4000 + seed), out_type)
    want = attention_reference(inputs, attrs, out_type)
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], output_dtype=out_type, **attrs)
    feeds = {n: inputs[n] for n in ("Q", "K", "V")}
    got = run_poisoned(model, feeds, want.shape, out_type, library)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), f"{np.count_nonzero(got.view(np.uint8) != want.view(np.uint8))} bytes"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("out", list(ATTENTION_OUTPUTS), ids=list(ATTENTION_OUTPUTS))
def test_fp8_attention_packed(out, seed, library):
    """The packed form (Q [B, S, 3*H*D], K and V absent): the reference gives the bits of the three-input form on
    the split projections, and the CPU kernel the reference's bits (poisoned output)."""
    out_type = ATTENTION_OUTPUTS[out]
    inputs, attrs = attention_case(np.random.default_rng(4100 + seed), out_type, packed=True)
    want = attention_reference(inputs, attrs, out_type)
    q, k, v = np.split(inputs["Q"], 3, axis=2)
    split = attention_reference({**inputs, "Q": q, "K": k, "V": v}, attrs, out_type)
    assert want.tobytes() == split.tobytes()
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q"], output_dtype=out_type, **attrs)
    assert list(model.graph.node[0].input[1:3]) == ["", ""]
    got = run_poisoned(model, {"Q": inputs["Q"]}, want.shape, out_type, library)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), f"{np.count_nonzero(got.view(np.uint8) != want.view(np.uint8))} bytes"


def _to_float16(inputs: dict) -> dict:
    """The case with Q (and K, V where given) in float16; attn_bias and y_scale stay float32."""
    return {n: a.astype(np.float16) if n in ("Q", "K", "V") else a for n, a in inputs.items()}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("packed", [False, True], ids=["qkv", "packed"])
@pytest.mark.parametrize("out", list(ATTENTION_OUTPUTS), ids=list(ATTENTION_OUTPUTS))
def test_fp8_attention_float16(out, packed, seed, library):
    """Float16 Q, K, V (the quantizer's default): the reference gives the bits it gives for the same values in
    float32, and the CPU kernel, which widens them exactly, the reference's bits (masks with finfo.min and -inf,
    NaN rows, saturating FP8 outputs; poisoned output)."""
    out_type = ATTENTION_OUTPUTS[out]
    inputs, attrs = attention_case(np.random.default_rng(4200 + seed), out_type, packed=packed)
    inputs = _to_float16(inputs)
    want = attention_reference(inputs, attrs, out_type)
    wide = {n: a.astype(np.float32) if n in ("Q", "K", "V") else a for n, a in inputs.items()}
    assert want.tobytes() == attention_reference(wide, attrs, out_type).tobytes()
    names = ["Q"] if packed else ["Q", "K", "V"]
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=names, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {n: inputs[n] for n in names}, want.shape, out_type, library)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), f"{np.count_nonzero(got.view(np.uint8) != want.view(np.uint8))} bytes"


def _attention_with_float16_probabilities(inputs: dict, attrs: dict, rounded_sum: bool) -> np.ndarray:
    """Float Y as a fused FP16 kernel may compute it (the contract allows it for float16 Q, K, V): the unnormalized
    probabilities exp(s - m) rounded to float16 before the product with V, divided by their row sum (of the rounded
    values with ``rounded_sum``, else of the unrounded ones)."""
    q, k, v = (inputs[n].astype(np.float64) for n in ("Q", "K", "V"))
    h = attrs["num_heads"]
    (b, s, hd), t, hdv = q.shape, k.shape[1], v.shape[2]
    d, dv = hd // h, hdv // h
    qh, kh = q.reshape(b, s, h, d).transpose(0, 2, 1, 3), k.reshape(b, t, h, d).transpose(0, 2, 1, 3)
    vh = v.reshape(b, t, h, dv).transpose(0, 2, 1, 3)
    scale = np.float32(attrs.get("scale", 1.0 / np.sqrt(d)))
    with np.errstate(all="ignore"):
        scores = (qh @ kh.transpose(0, 1, 3, 2)).astype(np.float32) * scale
        if "attn_bias" in inputs:
            scores = scores + inputs["attn_bias"]
        e = np.exp((scores - scores.max(axis=-1, keepdims=True)).astype(np.float64)).astype(np.float32)
        e16 = e.astype(np.float16).astype(np.float64)
        y = (e16 @ vh) / (e16 if rounded_sum else e).sum(axis=-1, keepdims=True, dtype=np.float64)
    return y.transpose(0, 2, 1, 3).reshape(b, s, hdv)


@pytest.mark.parametrize("rounded_sum", [False, True], ids=["sum-f32", "sum-f16"])
@pytest.mark.parametrize("seed", range(6))
def test_fp8_attention_float16_probability_bound(seed, rounded_sum):
    """The contract's bound for kernels that round the probabilities to float16 holds for that rounding:
    |Y - ref| <= 2^-10 * max_j |V[b, j, column]| (plus float32 rounding) wherever the reference is a number."""
    inputs, attrs = attention_case(np.random.default_rng(4300 + seed), TensorProto.FLOAT, max_seq=40)
    inputs = _to_float16(inputs)
    want = attention_reference(inputs, {**attrs, "nan_to_zero": 0}, TensorProto.FLOAT).astype(np.float64)
    got = _attention_with_float16_probabilities(inputs, attrs, rounded_sum)
    vmax = np.abs(inputs["V"].astype(np.float64)).max(axis=1, keepdims=True)  # per batch and column
    rows = np.isfinite(want)
    bound = 2.0**-10 * vmax * (1 + 1e-6) + 1e-6 * np.abs(want)
    assert rows.any()
    assert (np.abs(got - want) <= bound)[rows].all(), np.max((np.abs(got - want) / vmax)[rows])


@pytest.mark.parametrize(
    ("types", "message"),
    [
        ((np.float16, np.float32, np.float32), "input K has element type float32 but Q has float16"),
        ((np.float32, np.float32, np.float16), "input V has element type float16 but Q has float32"),
        ((np.int32, np.int32, np.int32), "input Q has element type int32"),
        ((np.float64, np.float64, np.float64), "input Q has element type float64"),
        ((np.int8, None, None), "input Q has element type int8"),
    ],
)
def test_fp8_attention_qkv_type_refusals(types, message, library):
    """Q, K and V of different types, or of a type other than float32/float16: the kernel says which input and
    what it takes; the reference refuses the same inputs."""
    shapes = {"Q": [1, 4, 24] if types[1] is None else [1, 4, 8], "K": [1, 5, 8], "V": [1, 5, 8]}
    inputs = {n: np.ones(shapes[n], t) for n, t in zip(("Q", "K", "V"), types) if t is not None}
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=list(inputs), num_heads=2)
    with pytest.raises(Exception, match=message) as info:
        ops.run(model, inputs, library)
    assert "float32 or float16 (all three the same type)" in str(info.value)
    with pytest.raises(ValueError, match="float32 or float16 \\(all three the same type\\)"):
        reference.fp8_attention(inputs["Q"], inputs.get("K"), inputs.get("V"), num_heads=2)


@pytest.mark.parametrize(
    ("q_shape", "give", "message"),
    [
        ([1, 4, 24], "K", "input K is given without V"),
        ([1, 4, 24], "V", "input V is given without K"),
        ([1, 4, 20], "", "needs a last dimension of 3 \\* num_heads \\* head_size"),
        ([4, 24], "", "must be 3-D"),
    ],
)
def test_fp8_attention_packed_refusals(q_shape, give, message, library):
    """One of K and V without the other, or a packed Q whose last dimension is not 3 * num_heads * D: a clear error
    from the kernel (the reference refuses the same inputs)."""
    q = np.ones(q_shape, np.float32)
    inputs = {"Q": q}
    if give:
        inputs[give] = np.ones([1, 4, 8], np.float32)
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q"], num_heads=2)
    with pytest.raises(Exception, match=message):
        ops.run(model, {"Q": q}, library)
    with pytest.raises(ValueError):
        reference.fp8_attention(q, inputs.get("K"), inputs.get("V"), num_heads=2)


def test_fp8_attention_cases_cover_the_contract():
    """The random cases above reach every corner they are meant to: saturated FP8 outputs, NaN rows with and
    without nan_to_zero, every bias rank, D != Dv."""
    seen = set()
    for seed in range(8):
        for out_type in ATTENTION_OUTPUTS.values():
            inputs, attrs = attention_case(np.random.default_rng(4000 + seed), out_type)
            y = attention_reference(inputs, {**attrs}, TensorProto.FLOAT)
            if nx.is_fp8(out_type) and (np.abs(y) / 0.05 > nx.get_format(out_type).max).any():
                seen.add("saturated")
            if np.isnan(y).any():
                seen.add("nan rows")
            if attrs["nan_to_zero"] and np.isnan(attention_reference(inputs, {**attrs, "nan_to_zero": 0}, 1)).any():
                seen.add("zeroed rows")
            if "attn_bias" in inputs:
                seen.add(f"bias rank {inputs['attn_bias'].ndim}")
            if inputs["V"].shape[2] * inputs["Q"].shape[2] and inputs["V"].shape[2] != inputs["Q"].shape[2]:
                seen.add("d != dv")
    assert seen >= {"saturated", "nan rows", "zeroed rows", "d != dv", *(f"bias rank {r}" for r in range(1, 5))}, seen
