"""Property tests (issue 14): FP8 conversions against an independent nearest-even oracle and ml_dtypes; finite inputs
give finite outputs for every FP8 op and fused activation on the plugin EP's CPU device; the graph pass on random
small CNN/MLP graphs gives checkable models that run through the custom-op library within an SQNR bound.
"""

from __future__ import annotations

import os
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import TensorProto, helper, numpy_helper

import fp8ort
import fp8ort.quantization as fq
from fp8ort import numerics as nx
from fp8ort import ops

FORMATS = [nx.E4M3FN, nx.E5M2, nx.E4M3FNUZ, nx.E5M2FNUZ]
ACTIVATIONS = ["", "Relu", "Clip", "Sigmoid", "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh"]
MIN_SQNR_DB = 10.0  # E4M3, 8 calibration rows: ~25 dB typical; 11.2 dB (CNN) and 13.5 dB (MLP) seen: not yet explained
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _oracle(x: np.ndarray, fmt: nx.FP8Format) -> np.ndarray:
    """Nearest FP8 code to each float32 value, ties to the even code, saturated to ±max; NaN to a NaN code.

    Built from the 256 decoded codes alone (no conversion routine involved).
    """
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(fmt.dtype).astype(np.float64)
    keep = np.isfinite(values) & ~((values == 0) & np.signbit(values))  # one zero: +0 (signs fixed below)
    values, codes = values[keep], codes[keep]
    xd = np.clip(x.astype(np.float64), -fmt.max, fmt.max)
    dist = np.abs(xd[:, None] - values[None, :])
    best = dist.min(axis=1, keepdims=True)
    tied = dist == best
    even = tied & (codes[None, :] % 2 == 0)
    pick = np.where(even.any(axis=1), even.argmax(axis=1), tied.argmax(axis=1))
    out = codes[pick].view(fmt.dtype).copy()
    has_neg_zero = np.signbit(np.array(0, fmt.dtype).view(np.uint8) | np.uint8(0x80)).item() is not None
    if has_neg_zero and fmt not in (nx.E4M3FNUZ, nx.E5M2FNUZ):  # IEEE-like formats keep the sign of a zero result
        neg = (out.astype(np.float32) == 0) & np.signbit(x)
        out[neg] = np.array(-0.0, np.float32).astype(fmt.dtype)
    return out


@FAST
@given(x=hnp.arrays(np.float32, st.integers(1, 64), elements=floats32), fmt=st.sampled_from(FORMATS))
def test_encode_matches_nearest_even_oracle_and_ml_dtypes(x, fmt):
    got = nx.encode(x, fmt)
    nan = np.isnan(x)
    assert np.isnan(got.astype(np.float32)[nan]).all()
    assert np.isfinite(got.astype(np.float32)[~nan]).all(), "saturation: no Inf from a number, Inf included"
    fin = np.isfinite(x)
    want = _oracle(x[fin], fmt)
    np.testing.assert_array_equal(got[fin].view(np.uint8), want.view(np.uint8))
    in_range = fin & (np.abs(x) <= fmt.max)  # where ml_dtypes' own cast (no saturation) is defined to agree
    np.testing.assert_array_equal(got[in_range].view(np.uint8), x[in_range].astype(fmt.dtype).view(np.uint8))


@FAST
@given(
    x=hnp.arrays(np.float32, st.integers(1, 32), elements=floats32),
    scale=st.floats(2.0**-20, 2.0**20, width=32),
    fmt=st.sampled_from(FORMATS),
)
def test_native_fp8quantize_matches_numerics(x, scale, fmt, library):
    """FP8Quantize in libfp8ort (custom-op route) gives numerics.quantize's bytes, NaN and Inf included."""
    s = np.float32(scale)
    model = ops.make_op_model("FP8Quantize", {"X": x, "scale": s}, output_dtype=fmt.onnx_type)
    got = ops.run(ops.session(model, library), {"X": x})[0]
    want = nx.quantize(x, s, fmt)
    nan = np.isnan(want.astype(np.float32))
    assert np.isnan(got.astype(np.float32)[nan]).all()
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))
    assert want.dtype == ml_dtypes.finfo(fmt.dtype).dtype


# ------------------------------------------------------------------------------------------ saturation


def _ep_run(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sess = fp8ort.InferenceSession(model, device="cpu", strict=True)
    arrays = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
    out = sess.run_with_ort_values(None, {k: ops.to_ort_value(a) for k, a in arrays.items()})[0]
    if sess.get_outputs()[0].type.startswith("tensor(float8"):
        raw = np.frombuffer(ops._tensor_bytes(out), np.uint8).reshape(out.shape())
        return raw.view(nx.E4M3FN.dtype).astype(np.float32)
    return out.numpy()


@pytest.fixture(scope="module", autouse=True)
def _ep_library(library):
    """The plugin EP loads the library under test (FP8ORT_LIBRARY), for the whole module."""
    old = os.environ.get("FP8ORT_LIBRARY")
    os.environ["FP8ORT_LIBRARY"] = library
    yield
    if old is None:
        del os.environ["FP8ORT_LIBRARY"]
    else:
        os.environ["FP8ORT_LIBRARY"] = old


huge_inputs = st.floats(-(2.0**127), 2.0**127, width=32)


@FAST
@given(
    data=st.data(),
    activation=st.sampled_from(ACTIVATIONS),
    op=st.sampled_from(["FP8Conv", "FP8MatMul"]),
    fp8_out=st.booleans(),
)
def test_finite_inputs_give_finite_outputs(data, activation, op, fp8_out):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    # Scales small enough that the largest exact sum (448 * 448 * K) times x_scale * w_scale stays float32.
    xs = np.float32(data.draw(st.floats(2.0**-13, 2.0**10, width=32)))
    attrs = {"activation": activation} if activation else {}
    out_dtype = TensorProto.FLOAT8E4M3FN if fp8_out else TensorProto.FLOAT
    if op == "FP8Conv":
        x = data.draw(hnp.arrays(np.float32, (1, 3, 5, 5), elements=huge_inputs))
        w = nx.encode(rng.uniform(-448, 448, (4, 3, 3, 3)).astype(np.float32))
        inputs = {"X": x, "W": w, "x_scale": xs, "w_scale": np.full(4, 1e-3, np.float32)}
    else:
        x = data.draw(hnp.arrays(np.float32, (2, 8), elements=huge_inputs))
        w = nx.encode(rng.uniform(-448, 448, (8, 4)).astype(np.float32))
        inputs = {"A": x, "B": w, "a_scale": xs, "b_scale": np.full(4, 1e-3, np.float32)}
    if fp8_out:
        inputs["y_scale"] = np.float32(1e-3)
    feeds = {"X": x} if op == "FP8Conv" else {"A": x}
    model = ops.make_op_model(op, inputs, graph_inputs=list(feeds), output_dtype=out_dtype, **attrs)
    y = _ep_run(model, feeds)
    assert np.isfinite(y).all(), f"{op} activation={activation!r}: {np.count_nonzero(~np.isfinite(y))} non-finite"


@FAST
@given(x=hnp.arrays(np.float32, st.integers(1, 40), elements=finite32), scale=st.floats(2.0**-100, 2.0**100, width=32))
def test_quantize_dequantize_round_trip_is_finite(x, scale):
    s = np.float32(scale)
    q = _ep_run(ops.make_op_model("FP8Quantize", {"X": x, "scale": s}), {"X": x})
    assert np.isfinite(q).all()
    v = q.astype(nx.E4M3FN.dtype)
    y = _ep_run(ops.make_op_model("FP8Dequantize", {"X": v, "scale": np.float32(1.0)}), {"X": v})
    assert np.isfinite(y).all()


# -------------------------------------------------------------------------------- the graph pass


def _activation_nodes(kind: str, src: str, dst: str, tag: str) -> tuple[list, list]:
    if kind == "Clip":
        lo, hi = f"{tag}_lo", f"{tag}_hi"
        inits = [numpy_helper.from_array(np.float32(0.0), lo), numpy_helper.from_array(np.float32(6.0), hi)]
        return [helper.make_node("Clip", [src, lo, hi], [dst])], inits
    return [helper.make_node(kind, [src], [dst])], []


@st.composite
def cnn_graphs(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    c = draw(st.sampled_from([4, 8]))
    hw = draw(st.integers(6, 12))
    nodes, inits, cur, ch = [], [], "x", c
    for i in range(draw(st.integers(1, 3))):
        group = draw(st.sampled_from([g for g in (1, 2, ch) if ch % g == 0]))
        m = draw(st.sampled_from([4, 8])) if group == 1 else ch
        k = draw(st.sampled_from([1, 3]))
        stride = draw(st.sampled_from([1, 2]))
        w = (rng.standard_normal((m, ch // group, k, k)) * 0.4).astype(np.float32)
        b = (rng.standard_normal(m) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        pad = k // 2
        nodes.append(
            helper.make_node(
                "Conv", [cur, f"w{i}", f"b{i}"], [f"c{i}"], group=group, strides=[stride] * 2, pads=[pad] * 4
            )
        )
        act_nodes, act_inits = _activation_nodes(
            draw(st.sampled_from(["Relu", "Clip", "Sigmoid", "HardSwish"])), f"c{i}", f"a{i}", f"a{i}"
        )
        nodes += act_nodes
        inits += act_inits
        cur, ch = f"a{i}", m
    wfc = (rng.standard_normal((ch, 5)) * 0.4).astype(np.float32)
    inits.append(numpy_helper.from_array(wfc, "wfc"))
    nodes += [
        helper.make_node("GlobalAveragePool", [cur], ["gp"]),
        helper.make_node("Flatten", ["gp"], ["fl"]),
        helper.make_node("MatMul", ["fl", "wfc"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, hw, hw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])
    graph = helper.make_graph(nodes, "cnn", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return model, (c, hw, hw)


@st.composite
def mlp_graphs(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    d = draw(st.sampled_from([8, 16, 24]))
    nodes, inits, cur, width = [], [], "x", d
    for i in range(draw(st.integers(1, 3))):
        out = draw(st.sampled_from([8, 16, 32]))
        w = (rng.standard_normal((width, out)) / np.sqrt(width)).astype(np.float32)
        b = (rng.standard_normal(out) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"h{i}"]),
        ]
        act_nodes, act_inits = _activation_nodes(
            draw(st.sampled_from(["Relu", "Clip", "Sigmoid", "HardSwish"])), f"h{i}", f"a{i}", f"a{i}"
        )
        nodes += act_nodes
        inits += act_inits
        cur, width = f"a{i}", out
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", d])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])
    graph = helper.make_graph(nodes, "mlp", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), (d,)


def _session(model: onnx.ModelProto, library: str | None = None) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    so.log_severity_level = 3
    if library:
        so.register_custom_ops_library(library)
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _check_graph_pass(model: onnx.ModelProto, in_shape: tuple[int, ...], library: str, seed: int) -> None:
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(seed)
    # 128 calibration rows: with 8, held-out inputs past the calibrated range saturate and random 3-layer MLPs fell to
    # 5-9 dB (seen in CI); with 128 the worst of 400 random MLPs was 15.9 dB
    calib = [{"x": rng.standard_normal((8, *in_shape)).astype(np.float32)} for _ in range(16)]
    q = fq.quantize(model, calibration_data=calib)
    onnx.checker.check_model(q, full_check=True)
    assert any(n.domain == "com.fp8ort" for n in q.graph.node), [n.op_type for n in q.graph.node]
    feed = {"x": rng.standard_normal((16, *in_shape)).astype(np.float32)}
    want = _session(model).run(None, feed)[0]
    got = _session(q, library).run(None, feed)[0]
    assert got.shape == want.shape and np.isfinite(got).all()
    sqnr = nx.sqnr_db(want.astype(np.float64), got.astype(np.float64))
    assert sqnr >= MIN_SQNR_DB, f"SQNR {sqnr:.1f} dB < {MIN_SQNR_DB} dB; ops {[n.op_type for n in q.graph.node]}"


# derandomized: the same graphs every run (CI must not flake); a random scan of 400 MLPs is quoted above
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(graph=cnn_graphs(), seed=st.integers(0, 2**31))
def test_graph_pass_on_random_cnns(graph, seed, library):
    _check_graph_pass(*graph, library, seed)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(graph=mlp_graphs(), seed=st.integers(0, 2**31))
def test_graph_pass_on_random_mlps(graph, seed, library):
    _check_graph_pass(*graph, library, seed)


def test_oracle_can_fail():
    """The conversion oracle is not vacuous: it disagrees with a truncating (round-toward-zero) conversion."""
    x = np.array([1.0 + 2**-4 + 2**-6], np.float32)  # above the midpoint between 1.0625 and 1.125 in E4M3FN
    assert _oracle(x, nx.E4M3FN).astype(np.float32)[0] == np.float32(1.125)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(_oracle(x, nx.E4M3FN).astype(np.float32), np.float32(1.0625))
