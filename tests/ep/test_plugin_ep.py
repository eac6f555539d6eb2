"""fp8ort's plugin execution provider on its CPU device: every com.fp8ort op and a quantized CNN through
``fp8ort.InferenceSession``, bit-identical to the custom-op route (``fp8ort.ops.run``), with every node placed where
ORT reports it; registration cycles and the errors of bad arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import fp8ort
from fp8ort import numerics as nx
from fp8ort import ops

from .._util import activations, fp8_weights
from ..quantization import qmodels
from ..test_cpu_kernels import (
    ATTENTION_OUTPUTS,
    CONV_CASES,
    CONV_VARIANTS,
    MATMUL_SHAPES,
    MATMUL_VARIANTS,
    POOL_TYPES,
    ConvCase,
    _add_residual_and_output_scale,
    _conv_inputs,
    _make_tensor,
    _to_float16,
    _variant_id,
    attention_case,
    max_pool_case,
)

EP = fp8ort.get_ep_name()


@pytest.fixture(autouse=True)
def _use_library(library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit-identical (NaN payloads included)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert got.tobytes() == want.tobytes(), f"{np.count_nonzero(got != want)} of {want.size} elements differ"


def _outputs(sess, feeds: dict) -> list[np.ndarray]:
    """Every output as a NumPy array (bfloat16 as its raw uint16 bits, which ORT cannot hand to NumPy)."""
    arrays = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
    outs = sess.run_with_ort_values(None, {k: ops.to_ort_value(a) for k, a in arrays.items()})
    result = []
    for out, meta in zip(outs, sess.get_outputs()):
        if meta.type == "tensor(bfloat16)":
            result.append(np.frombuffer(ops._tensor_bytes(out, 2), np.uint16).reshape(out.shape()).copy())
        elif meta.type.startswith("tensor(float8"):
            result.append(np.frombuffer(ops._tensor_bytes(out), np.uint8).reshape(out.shape()).copy())
        else:
            result.append(out.numpy())
    return result


def _ep_and_custom_op(model: onnx.ModelProto, feeds: dict, library: str, strict: bool = True):
    sess = fp8ort.InferenceSession(model, device="cpu", strict=strict)
    got = _outputs(sess, feeds)
    want = _outputs(ops.session(model, library), feeds)
    return sess, got, want


def _check_op(model, feeds, library):
    sess, got, want = _ep_and_custom_op(model, feeds, library)
    assert sess.device == "cpu"
    assert sess.placement and set(sess.placement.values()) == {EP}, sess.placement
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("variant", CONV_VARIANTS, ids=_variant_id)
@pytest.mark.parametrize("case", CONV_CASES[:-1], ids=str)
def test_fp8_conv_on_the_ep(case, variant, rng, library):
    inputs, attrs, out_type = _conv_inputs(rng, case, variant)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    _check_op(model, {"X": inputs["X"]}, library)


def test_fp8_conv_weight_fed_at_run_time_on_the_ep(rng, library):
    case = ConvCase(2, 4, (6, 6), 9, (3, 3), pads=(1, 1, 1, 1))
    inputs, attrs, out_type = _conv_inputs(rng, case, CONV_VARIANTS[0])
    model = ops.make_op_model("FP8Conv", inputs, graph_inputs=["X", "W"], output_dtype=out_type, **attrs)
    _check_op(model, {"X": inputs["X"], "W": inputs["W"]}, library)


@pytest.mark.parametrize("variant", MATMUL_VARIANTS, ids=lambda v: _variant_id((*v[:5], f"tB{v[5]}")))
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: f"A{'x'.join(map(str, s[0]))}-N{s[1]}")
def test_fp8_matmul_on_the_ep(shape, variant, rng, library):
    a_shape, n = shape
    x_type, out_type, bias, z_type, relu, trans_b = variant
    a_scale = np.float32(rng.uniform(0.01, 0.1))
    a = _make_tensor(rng, a_shape, x_type, a_scale)
    b, b_scale = fp8_weights(rng, (n, a_shape[-1]) if trans_b else (a_shape[-1], n), axis=0 if trans_b else 1)
    inputs = {"A": a, "B": b, "a_scale": a_scale, "b_scale": b_scale}
    if bias:
        inputs["C"] = rng.standard_normal(n).astype(np.float32)
    from fp8ort import reference

    _add_residual_and_output_scale(
        rng, inputs, reference.fp8_matmul(a, b, a_scale, b_scale, transB=trans_b), z_type, out_type
    )
    model = ops.make_op_model(
        "FP8MatMul",
        inputs,
        graph_inputs=["A"],
        output_dtype=out_type,
        transB=trans_b,
        activation="Relu" if relu else "",
    )
    _check_op(model, {"A": a}, library)


@pytest.mark.parametrize("fmt", list(nx.FORMATS.values()), ids=str)
@pytest.mark.parametrize(
    "x_dtype", [np.float32, np.float16, nx.HIGH_PRECISION[TensorProto.BFLOAT16]], ids=["f32", "f16", "bf16"]
)
def test_fp8_quantize_and_dequantize_on_the_ep(fmt, x_dtype, rng, library):
    scale = np.float32(rng.uniform(0.005, 0.05))
    x = activations(rng, (3, 257), scale, np.float32).astype(x_dtype)
    q = ops.make_op_model("FP8Quantize", {"X": x, "scale": scale}, output_dtype=fmt.onnx_type)
    _check_op(q, {"X": x}, library)
    xq = nx.quantize(x.astype(np.float32), scale, fmt)
    out = helper.np_dtype_to_tensor_dtype(np.dtype(x_dtype)) if x_dtype is not np.float32 else TensorProto.FLOAT
    if x_dtype is nx.HIGH_PRECISION[TensorProto.BFLOAT16]:
        out = TensorProto.BFLOAT16
    dq = ops.make_op_model("FP8Dequantize", {"X": xq, "scale": scale}, output_dtype=out)
    _check_op(dq, {"X": xq}, library)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", list(POOL_TYPES.values()), ids=list(POOL_TYPES))
def test_fp8_max_pool_on_the_ep(dtype, seed, library):
    x, attrs = max_pool_case(np.random.default_rng(2000 + seed), dtype)
    _check_op(ops.make_op_model("FP8MaxPool", {"X": x}, **attrs), {"X": x}, library)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("out", list(ATTENTION_OUTPUTS), ids=list(ATTENTION_OUTPUTS))
def test_fp8_attention_on_the_ep(out, seed, library):
    out_type = ATTENTION_OUTPUTS[out]
    inputs, attrs = attention_case(np.random.default_rng(5000 + seed), out_type)
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], output_dtype=out_type, **attrs)
    _check_op(model, {n: inputs[n] for n in ("Q", "K", "V")}, library)
    inputs, attrs = attention_case(np.random.default_rng(5100 + seed), out_type, packed=True)
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q"], output_dtype=out_type, **attrs)
    _check_op(model, {"Q": inputs["Q"]}, library)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("packed", [False, True], ids=["qkv", "packed"])
@pytest.mark.parametrize("out", list(ATTENTION_OUTPUTS), ids=list(ATTENTION_OUTPUTS))
def test_fp8_attention_float16_on_the_ep(out, packed, seed, library):
    """Float16 Q, K, V (the quantizer's default) on the EP: the custom-op route's bits."""
    out_type = ATTENTION_OUTPUTS[out]
    inputs, attrs = attention_case(np.random.default_rng(5200 + seed), out_type, packed=packed)
    inputs = _to_float16(inputs)
    names = ["Q"] if packed else ["Q", "K", "V"]
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=names, output_dtype=out_type, **attrs)
    _check_op(model, {n: inputs[n] for n in names}, library)


def test_fp8_attention_mixed_types_on_the_ep():
    """Q float16 with K and V float32 on the EP: the kernel's message names K and the types it takes."""
    rng = np.random.default_rng(5300)
    feeds = {
        "Q": rng.standard_normal((1, 3, 8)).astype(np.float16),
        "K": rng.standard_normal((1, 5, 8)).astype(np.float32),
        "V": rng.standard_normal((1, 5, 8)).astype(np.float32),
    }
    model = ops.make_op_model("FP8Attention", feeds, graph_inputs=list(feeds), num_heads=2)
    with pytest.raises(Exception, match=r"input K has element type float32 but Q has float16.*all three the same"):
        fp8ort.InferenceSession(model, device="cpu", strict=True).run(None, feeds)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
def test_fp8_layer_normalization_on_the_ep(dtype, seed, library):
    from ..test_channel_ops import layer_norm_case

    inputs, attrs = layer_norm_case(np.random.default_rng(7100 + seed), dtype)
    _check_op(ops.make_op_model("FP8LayerNormalization", inputs, **attrs), {"X": inputs["X"]}, library)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("op", ["FP8GlobalAveragePool", "FP8ChannelMul"])
def test_channel_ops_on_the_ep(op, layout, library):
    from ..test_channel_ops import channel_case

    inputs = channel_case(np.random.default_rng(7200), nx.E4M3FN, layout)
    if op == "FP8GlobalAveragePool":
        inputs = {k: inputs[k] for k in ("X", "x_scale")}
    _check_op(ops.make_op_model(op, inputs, layout=layout), {"X": inputs["X"]}, library)


def _quantized(model: ir.Model, layout: str = "NCHW") -> onnx.ModelProto:
    cfg = fp8ort.QuantizeConfig(layout=layout)
    q = fp8ort.quantize(model, calibration_data=qmodels.calib(model, n=8), config=cfg)
    return ir.to_proto(q)


_ORT_MINOR = tuple(int(p) for p in ort.__version__.split(".")[:2])
# onnxruntime 1.24-1.31 fuse the encoder's FP8 DequantizeLinear->MatMul into a node they then reject (FACTS.md), on
# either route.
_ENCODER = pytest.param(
    qmodels.encoder,
    id="encoder",
    marks=pytest.mark.skipif(
        _ORT_MINOR < (1, 32), reason="onnxruntime < 1.32 rejects its own FP8 MatMulIntegerToFloat fusion"
    ),
)


@pytest.mark.parametrize("build", [qmodels.resnetish, qmodels.bottleneck, _ENCODER])
def test_quantized_model_through_the_ep_matches_the_custom_op_route(build, rng, library):
    model = _quantized(build())
    feed_name = model.graph.input[0].name
    shape = [2] + [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
    feeds = {feed_name: rng.standard_normal(shape).astype(np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp8ort.PlacementWarning)  # standard ops may still run on ORT's CPU EP
        sess, got, want = _ep_and_custom_op(model, feeds, library, strict=False)
    fp8_nodes = {n.name for n in model.graph.node if n.domain == fp8ort.DOMAIN}
    assert fp8_nodes and all(sess.placement[n] == EP for n in fp8_nodes), sess.placement
    for g, w in zip(got, want):
        _same(g, w)


def test_unsupported_ops_warn_or_raise_when_strict(rng, library):
    x = rng.standard_normal((2, 3, 3)).astype(np.float32)
    q = helper.make_node("FP8Quantize", ["X", "s"], ["q"], domain=fp8ort.DOMAIN, output_dtype=TensorProto.FLOAT8E4M3FN)
    dq = helper.make_node("FP8Dequantize", ["q", "s"], ["d"], domain=fp8ort.DOMAIN, output_dtype=TensorProto.FLOAT)
    det = helper.make_node("Det", ["d"], ["Y"], name="the_det")
    graph = helper.make_graph(
        [q, dq, det],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [0.05])],
    )
    model = helper.make_model(graph, opset_imports=ops.OPSET_IMPORTS, ir_version=ops.IR_VERSION)
    with pytest.warns(fp8ort.PlacementWarning, match=r"1 of 3 nodes .* no kernel for Det; they run on CPUExecution"):
        sess = fp8ort.InferenceSession(model, device="cpu")
    assert sess.placement["the_det"] == "CPUExecutionProvider"
    _same(_outputs(sess, {"X": x})[0], _outputs(ops.session(model, library), {"X": x})[0])
    with pytest.raises(RuntimeError, match=r"no kernel for Det.*strict=True"):
        fp8ort.InferenceSession(model, device="cpu", strict=True)


def test_kernel_errors_come_back_as_ort_errors_naming_the_op(rng):
    """A bad run-time shape fails that run with the kernel's message; the session keeps working."""
    a = rng.standard_normal((3, 8)).astype(np.float32)
    b, bs = fp8_weights(rng, (8, 5), axis=1)
    model = ops.make_op_model(
        "FP8MatMul", {"A": a, "B": b, "a_scale": np.float32(0.05), "b_scale": bs}, graph_inputs=["A"]
    )
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "K"
    sess = fp8ort.InferenceSession(model, device="cpu", strict=True)
    with pytest.raises(Exception, match="FP8MatMul"):
        sess.run(None, {"A": rng.standard_normal((3, 7)).astype(np.float32)})
    assert sess.run(None, {"A": a})[0].shape == (3, 5)


_TIMING_CHILD = """
import sys
import numpy as np
import fp8ort
from fp8ort import ops
x = np.linspace(-3, 3, 12, dtype=np.float32)
q = ops.make_op_model("FP8Quantize", {"X": x, "scale": np.float32(0.02)})
if sys.argv[1] == "ep":
    sess = fp8ort.InferenceSession(q, device="cpu", strict=True)
else:
    sess = ops.session(q, sys.argv[2])
for _ in range(7):
    sess.run(None, {"X": x})
del sess
"""


@pytest.mark.parametrize("route", ["ep", "custom_op"])
@pytest.mark.parametrize("timing", ["1", ""])
def test_host_timing_table_counts_every_compute_call(route, timing, library):
    """FP8ORT_HOST_TIMING=1 prints, at exit, each op's host time and its number of Compute calls; unset, nothing."""
    env = {**os.environ, "FP8ORT_LIBRARY": library, "FP8ORT_HOST_TIMING": timing}
    done = subprocess.run(
        [sys.executable, "-c", _TIMING_CHILD, route, library], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stderr.splitlines() if line.strip().startswith("FP8Quantize")]
    if timing:
        assert "FP8ORT_HOST_TIMING" in done.stderr
        assert len(rows) == 1 and rows[0][2] == "7", done.stderr
        assert float(rows[0][1]) > 0.0
    else:
        assert rows == [] and "FP8ORT_HOST_TIMING" not in done.stderr


def test_register_unregister_cycles(library):
    name = fp8ort.register()
    for _ in range(3):
        assert fp8ort.unregister(name)
        assert not fp8ort.unregister(name)
        assert all(d.ep_name != EP for d in ort.get_ep_devices())
        assert fp8ort.register() == name == fp8ort.register()
        devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
        assert [d.device.type for d in devices if dict(d.ep_metadata)["fp8ort.device"] == "cpu"] == [
            ort.OrtHardwareDeviceType.CPU
        ]
        x = np.linspace(-2, 2, 9, dtype=np.float32)
        model = ops.make_op_model("FP8Quantize", {"X": x, "scale": np.float32(0.01)})
        _same(
            _outputs(fp8ort.InferenceSession(model, device="cpu"), {"X": x})[0],
            _outputs(ops.session(model, library), {"X": x})[0],
        )


def test_ep_metadata_names_the_build_backend():
    assert fp8ort.backend() in ("none", "cuda", "hip")
    cpu = fp8ort.select_device("cpu")
    meta = dict(cpu.ep_metadata)
    assert meta["fp8ort.device"] == "cpu" and meta["fp8ort.backend"] == fp8ort.backend()
    assert cpu.ep_name == EP and cpu.ep_vendor == "fp8ort"


def test_auto_device_is_gpu_only_when_offered():
    model = ops.make_op_model("FP8Quantize", {"X": np.ones(4, np.float32), "scale": np.float32(1.0)})
    has_gpu = any(dict(d.ep_metadata)["fp8ort.device"] == "gpu" for d in fp8ort.ep_devices())
    assert fp8ort.InferenceSession(model).device == ("gpu:0" if has_gpu else "cpu")


@pytest.mark.parametrize(
    ("device", "error", "match"),
    [
        ("tpu", ValueError, "not a device"),
        ("gpu:one", ValueError, "ordinal must be an integer"),
        ("gpu:99", RuntimeError, "offers cpu"),
        (0, TypeError, "must be a string"),
    ],
)
def test_bad_devices(device, error, match):
    model = ops.make_op_model("FP8Quantize", {"X": np.ones(4, np.float32), "scale": np.float32(1.0)})
    with pytest.raises(error, match=match):
        fp8ort.InferenceSession(model, device=device)


def test_gpu_request_without_gpu_names_what_was_found():
    if any(dict(d.ep_metadata)["fp8ort.device"] == "gpu" for d in fp8ort.ep_devices()):
        pytest.skip("this machine has a GPU device")
    model = ops.make_op_model("FP8Quantize", {"X": np.ones(4, np.float32), "scale": np.float32(1.0)})
    with pytest.raises(RuntimeError, match=r"device='gpu': .*offers cpu; .*(FP8ORT_GPU|no such GPU)"):
        fp8ort.InferenceSession(model, device="gpu")


def test_bad_session_arguments():
    model = ops.make_op_model("FP8Quantize", {"X": np.ones(4, np.float32), "scale": np.float32(1.0)})
    with pytest.raises(ValueError, match="graph_capture=True needs a GPU"):
        fp8ort.InferenceSession(model, device="cpu", graph_capture=True)
    with pytest.raises(ValueError, match="picks its providers"):
        fp8ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    with pytest.raises(FileNotFoundError):
        fp8ort.InferenceSession("/nonexistent/model.onnx")
    with pytest.raises(Exception, match="enable_graph_capture"):
        fp8ort.InferenceSession(model, device="cpu", provider_options={"enable_graph_capture": "maybe"})


def test_old_onnxruntime_is_refused_with_the_versions(monkeypatch):
    monkeypatch.setattr(ort, "__version__", "1.22.1")
    with pytest.raises(RuntimeError, match=r"needs onnxruntime >= 1\.24.*found onnxruntime 1\.22\.1"):
        fp8ort.InferenceSession(
            ops.make_op_model("FP8Quantize", {"X": np.ones(2, np.float32), "scale": np.float32(1.0)})
        )


def test_info_command_reports_backend_and_devices(library):
    out = subprocess.run(
        [sys.executable, "-m", "fp8ort", "info", "--json"], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    d = json.loads(out)
    assert d["library"] == library
    assert d["backend"] == fp8ort.backend()
    assert any(e.startswith(f"{EP}:cpu") for e in d["ep_devices"]), d["ep_devices"]
    assert d["onnxruntime"] == ort.__version__
