"""Fused activations: every pattern the rules absorb (single ops and exporter decompositions), what they leave alone,
the contract attributes, and the numerics of the FP8 op against its QDQ emulation and the float model.

The reference and the CPU kernels gain the new activations in parallel: the emulation tests skip while
``fp8ort.reference.ACTIVATIONS`` lacks them, the library tests while the built library rejects them.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import onnx
import onnx.parser
import onnx_ir as ir
import pytest
from conftest import library_path, run_float, session_options
from onnx import TensorProto, helper, numpy_helper

import fp8ort.quantization as fq
from fp8ort import reference
from fp8ort.numerics import sqnr_db

NCHW = fq.QuantizeConfig(layout="NCHW")  # the graph shapes asserted below are those of the NCHW layout

SQRT2 = math.sqrt(2.0)
K_TANH = math.sqrt(2.0 / math.pi)
NEW_ACTIVATIONS = ("Clip", "Sigmoid", "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh")


def _mk(op: str, inputs: list[str], out: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [out], **attrs)


# name: (nodes after the conv output "c" ending in "y", expected (activation, alpha, beta), opset)
CASES = {
    "relu": ([_mk("Relu", ["c"], "y")], ("Relu", None, None), 21),
    "relu6": ([_mk("Clip", ["c", "k0", "k6"], "y")], ("Clip", 0.0, 6.0), 21),
    "clip-max-only": ([_mk("Clip", ["c", "", "k6"], "y")], ("Clip", -math.inf, 6.0), 21),
    "clip-opset10-attrs": ([_mk("Clip", ["c"], "y", min=-1.0, max=2.0)], ("Clip", -1.0, 2.0), 10),
    "sigmoid": ([_mk("Sigmoid", ["c"], "y")], ("Sigmoid", None, None), 21),
    "hardsigmoid": ([_mk("HardSigmoid", ["c"], "y", alpha=0.3, beta=0.4)], ("HardSigmoid", 0.3, 0.4), 21),
    "hardsigmoid-defaults": ([_mk("HardSigmoid", ["c"], "y")], ("HardSigmoid", 0.2, 0.5), 21),
    "hardswish": ([_mk("HardSwish", ["c"], "y")], ("HardSwish", None, None), 21),
    "gelu-op": ([_mk("Gelu", ["c"], "y")], ("Gelu", None, None), 21),
    "gelu-tanh-op": ([_mk("Gelu", ["c"], "y", approximate="tanh")], ("GeluTanh", None, None), 21),
    "silu": ([_mk("Sigmoid", ["c"], "s"), _mk("Mul", ["c", "s"], "y")], ("Silu", None, None), 21),
    "silu-swapped": ([_mk("Sigmoid", ["c"], "s"), _mk("Mul", ["s", "c"], "y")], ("Silu", None, None), 21),
    "hardswish-hardsigmoid": (
        [_mk("HardSigmoid", ["c"], "h", alpha=1.0 / 6.0), _mk("Mul", ["h", "c"], "y")],
        ("HardSwish", None, None),
        13,
    ),
    "hardswish-relu6-div": (
        [
            _mk("Add", ["c", "k3"], "a"),
            _mk("Clip", ["a", "k0", "k6"], "r"),
            _mk("Mul", ["c", "r"], "m"),
            _mk("Div", ["m", "k6"], "y"),
        ],
        ("HardSwish", None, None),
        17,
    ),
    "hardswish-relu6-mul-sixth": (
        [
            _mk("Add", ["k3", "c"], "a"),
            _mk("Clip", ["a", "k0", "k6"], "r"),
            _mk("Mul", ["r", "ksixth"], "m"),
            _mk("Mul", ["m", "c"], "y"),
        ],
        ("HardSwish", None, None),
        21,
    ),
    "hardsigmoid-relu6-div": (
        [_mk("Add", ["c", "k3"], "a"), _mk("Clip", ["a", "k0", "k6"], "r"), _mk("Div", ["r", "k6"], "y")],
        ("HardSigmoid", 1.0 / 6.0, 0.5),
        21,
    ),
    "gelu-torch": (  # x * (erf(x / sqrt2) + 1) * 0.5
        [
            _mk("Div", ["c", "ksqrt2"], "d"),
            _mk("Erf", ["d"], "e"),
            _mk("Add", ["e", "k1"], "a"),
            _mk("Mul", ["c", "a"], "m"),
            _mk("Mul", ["m", "khalf"], "y"),
        ],
        ("Gelu", None, None),
        17,
    ),
    "gelu-hf": (  # 0.5 * x * (1 + erf(x * 0.7071))
        [
            _mk("Mul", ["khalf", "c"], "h"),
            _mk("Mul", ["c", "kisqrt2"], "d"),
            _mk("Erf", ["d"], "e"),
            _mk("Add", ["k1", "e"], "a"),
            _mk("Mul", ["h", "a"], "y"),
        ],
        ("Gelu", None, None),
        21,
    ),
    "gelu-div2": (  # (x * (erf(x / sqrt2) + 1)) / 2
        [
            _mk("Div", ["c", "ksqrt2"], "d"),
            _mk("Erf", ["d"], "e"),
            _mk("Add", ["e", "k1"], "a"),
            _mk("Mul", ["a", "c"], "m"),
            _mk("Div", ["m", "k2"], "y"),
        ],
        ("Gelu", None, None),
        21,
    ),
    "gelu-dynamo": (  # x * (0.5 * (erf(x / sqrt2) + 1))
        [
            _mk("Div", ["c", "ksqrt2"], "d"),
            _mk("Erf", ["d"], "e"),
            _mk("Add", ["e", "k1"], "a"),
            _mk("Mul", ["khalf", "a"], "h"),
            _mk("Mul", ["c", "h"], "y"),
        ],
        ("Gelu", None, None),
        18,
    ),
    "gelu-tanh-pow": (
        [
            _mk("Pow", ["c", "k3"], "p"),
            _mk("Mul", ["kc", "p"], "q"),
            _mk("Add", ["c", "q"], "s"),
            _mk("Mul", ["s", "ktanh"], "u"),
            _mk("Tanh", ["u"], "t"),
            _mk("Add", ["t", "k1"], "a"),
            _mk("Mul", ["c", "khalf"], "h"),
            _mk("Mul", ["h", "a"], "y"),
        ],
        ("GeluTanh", None, None),
        18,
    ),
    "gelu-tanh-cube-mul": (
        [
            _mk("Mul", ["c", "c"], "sq"),
            _mk("Mul", ["c", "sq"], "p"),
            _mk("Mul", ["kc", "p"], "q"),
            _mk("Add", ["c", "q"], "s"),
            _mk("Mul", ["ktanh", "s"], "u"),
            _mk("Tanh", ["u"], "t"),
            _mk("Add", ["k1", "t"], "a"),
            _mk("Mul", ["c", "a"], "m"),
            _mk("Mul", ["khalf", "m"], "y"),
        ],
        ("GeluTanh", None, None),
        17,
    ),
}

CONSTS = {
    "k0": 0.0,
    "k1": 1.0,
    "k2": 2.0,
    "k3": 3.0,
    "k6": 6.0,
    "khalf": 0.5,
    "ksixth": 1.0 / 6.0,
    "ksqrt2": SQRT2,
    "kisqrt2": 1.0 / SQRT2,
    "ktanh": K_TANH,
    "kc": 0.044715,
}


def conv_model(
    tail: list[onnx.NodeProto], opset: int = 21, extra_outputs: tuple[str, ...] = (), seed: int = 0
) -> onnx.ModelProto:
    """x[N,4,6,6] -> Conv(8, 3x3, pad 1, bias) -> c, then ``tail`` producing y."""
    rng = np.random.default_rng(seed)
    used = {i for n in tail for i in n.input}
    inits = [
        numpy_helper.from_array((0.3 * rng.standard_normal((8, 4, 3, 3))).astype(np.float32), "w"),
        numpy_helper.from_array((0.1 * rng.standard_normal(8)).astype(np.float32), "b"),
    ]
    inits += [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in CONSTS.items() if k in used]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), *tail]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 8, 6, 6]) for n in ("y", *extra_outputs)]
    graph = helper.make_graph(
        nodes, "act", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])], outputs, inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset < 19 else 10
    onnx.checker.check_model(model, full_check=True)
    return model


def _calib(n: int = 8, seed: int = 1) -> dict[str, np.ndarray]:
    return {"x": (2.0 * np.random.default_rng(seed).standard_normal((n, 4, 6, 6))).astype(np.float32)}


def _fp8_nodes(q: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in q.graph.node if n.domain == "com.fp8ort"]


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


@functools.cache
def _library_activations() -> frozenset[str]:
    """The activations the built library's FP8Conv accepts (empty without a library)."""
    lib = library_path()
    if lib is None:
        return frozenset()
    from fp8ort import ops
    from fp8ort.numerics import E4M3FN, quantize

    ok = set()
    x = np.ones((1, 2, 3, 3), np.float32)
    w = quantize(np.ones((2, 2, 1, 1), np.float32), np.float32(1.0), E4M3FN)
    for act in ("", "Relu", *NEW_ACTIVATIONS):
        extra = {"activation_alpha": 0.0, "activation_beta": 6.0} if act == "Clip" else {}
        model = ops.make_op_model(
            "FP8Conv",
            {"X": x, "W": w, "x_scale": np.float32(1.0), "w_scale": np.ones(2, np.float32)},
            activation=act,
            **extra,
        )
        try:
            ops.run(ops.session(model, lib), {"X": x})
            ok.add(act)
        except Exception:  # the library of this checkout does not know the activation yet
            pass
    return frozenset(ok)


@pytest.mark.parametrize("case", list(CASES))
def test_pattern_is_fused_into_fp8conv(case):
    tail, (act, alpha, beta), opset = CASES[case]
    model = conv_model(tail, opset)
    q, rep = fq.quantize(model, calibration_data=_calib(), config=NCHW, return_report=True)
    onnx.checker.check_model(q, full_check=True)
    assert [n.op_type for n in q.graph.node] == ["FP8Conv"], f"{case}: left {[n.op_type for n in q.graph.node]}"
    attrs = _attrs(q.graph.node[0])
    assert attrs["activation"].decode() == act
    for name, want in (("activation_alpha", alpha), ("activation_beta", beta)):
        if want is None:
            assert name not in attrs
        else:
            assert attrs[name] == pytest.approx(want, rel=1e-6)
    assert q.graph.output[0].name == "y"
    assert {n.status for n in rep.nodes if n.op_type != "Conv"} == {"fused"}
    assert rep.node(q.graph.node[0].name).reason.startswith("FP8 FP8Conv (Conv+bias+")


@pytest.mark.parametrize("case", list(CASES))
def test_qdq_emulation_keeps_the_float_activation(case):
    """The QDQ model keeps the activation as standard ops after the dequantized conv: its output is the FP8 op's
    function of the float model's, close to the float model."""
    tail, _, opset = CASES[case]
    model = conv_model(tail, opset)
    calib = _calib()
    qdq = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    onnx.checker.check_model(qdq, full_check=True)
    assert all(n.domain == "" for n in qdq.graph.node)
    feed = _calib(4, seed=9)
    ref = run_float(ir.from_proto(model), feed)[0]
    got = run_float(ir.from_proto(qdq), feed)[0]
    assert sqnr_db(ref, got) > 22.0


def _needs_reference_activations() -> None:
    missing = [a for a in NEW_ACTIVATIONS if a not in reference.ACTIVATIONS]
    if missing:
        pytest.skip(f"fp8ort.reference does not implement the activations {missing} yet")


@pytest.mark.parametrize("case", list(CASES))
def test_reference_emulation_matches_qdq(case):
    _needs_reference_activations()
    from fp8ort.emulate import run_reference

    tail, _, opset = CASES[case]
    model = conv_model(tail, opset)
    calib = _calib()
    q = fq.quantize(model, calibration_data=calib, config=NCHW)
    qdq = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    feed = _calib(4, seed=9)
    got = run_reference(q, feed)[0]
    assert sqnr_db(run_float(ir.from_proto(qdq), feed)[0], got) > 60.0  # float32 rounding order only


@pytest.mark.parametrize("case", ["relu6", "silu", "hardswish-relu6-div", "gelu-torch", "gelu-tanh-pow", "hardsigmoid"])
def test_library_matches_qdq(case):
    tail, (act, _, _), opset = CASES[case]
    if act not in _library_activations():
        pytest.skip(
            f"the built libfp8ort.so does not run activation {act!r} yet"
            if library_path()
            else "libfp8ort.so is not built"
        )
    import onnxruntime as ort

    model = conv_model(tail, opset)
    calib = _calib()
    q = fq.quantize(model, calibration_data=calib, config=NCHW)
    qdq = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    feed = _calib(4, seed=9)
    sess = ort.InferenceSession(
        q.SerializeToString(), session_options(library_path()), providers=["CPUExecutionProvider"]
    )
    assert sqnr_db(run_float(ir.from_proto(qdq), feed)[0], sess.run(None, feed)[0]) > 60.0


@pytest.mark.parametrize(
    ("tail", "extra_outputs", "why"),
    [
        ([_mk("Sigmoid", ["c"], "s"), _mk("Mul", ["c", "s"], "y")], ("s",), "the Sigmoid output is also read"),
        ([_mk("Relu", ["c"], "y")], ("c",), "the conv output is also a graph output"),
        (
            [_mk("Sigmoid", ["c"], "s"), _mk("Mul", ["c", "s"], "y"), _mk("Add", ["c", "k1"], "z")],
            ("z",),
            "the conv output has a third consumer",
        ),
        (
            [
                _mk("Div", ["c", "ksqrt2"], "d"),
                _mk("Erf", ["d"], "e"),
                _mk("Add", ["e", "k1"], "a"),
                _mk("Mul", ["c", "a"], "m"),
                _mk("Mul", ["m", "k2"], "y"),
            ],
            (),
            "GELU with 2 instead of 0.5",
        ),
        (
            [
                _mk("Add", ["c", "k3"], "a"),
                _mk("Clip", ["a", "k0", "k6"], "r"),
                _mk("Mul", ["c", "r"], "m"),
                _mk("Div", ["m", "k3"], "y"),
            ],
            (),
            "x * relu6(x + 3) / 3 is not HardSwish",
        ),
    ],
    ids=["sigmoid-read-twice", "conv-output-read", "three-consumers", "wrong-gelu-constant", "wrong-hardswish"],
)
def test_shared_or_different_intermediates_are_not_fused(tail, extra_outputs, why):
    model = conv_model(tail, extra_outputs=extra_outputs)
    q, rep = fq.quantize(model, calibration_data=_calib(), config=NCHW, return_report=True)
    onnx.checker.check_model(q, full_check=True)
    fp8 = _fp8_nodes(q)
    assert len(fp8) == 1, why
    assert _attrs(fp8[0])["activation"] == b"", why
    assert len(q.graph.node) == 1 + len(tail), why  # the activation's nodes stay as they were
    run_float(
        ir.from_proto(fq.quantize(model, calibration_data=_calib(), config=fq.QuantizeConfig(format="qdq"))), _calib(2)
    )


def test_sigmoid_gate_of_another_tensor_fuses_the_sigmoid_only():
    """``Sigmoid(conv1) * conv2`` (a gate): the Sigmoid is conv1's activation, the Mul stays float."""
    tail = [
        _mk("Conv", ["x", "w", "b"], "c2", pads=[1, 1, 1, 1]),
        _mk("Sigmoid", ["c"], "s"),
        _mk("Mul", ["s", "c2"], "y"),
    ]
    q = fq.quantize(conv_model(tail), calibration_data=_calib(), config=NCHW)
    onnx.checker.check_model(q, full_check=True)
    got = sorted((n.op_type, _attrs(n).get("activation", b"-")) for n in q.graph.node)
    # both convs read x with the same scale: one FP8Quantize feeds them (shared_input.py)
    assert got == [("FP8Conv", b""), ("FP8Conv", b"Sigmoid"), ("FP8Quantize", b"-"), ("Mul", b"-")]


FFN = """
<ir_version: 10, opset_import: ["" : 21]>
ffn (float[N,6,16] x) => (float[N,6,16] y) {
    h = MatMul (x, w1)
    hb = Add (b1, h)
    d = Div (hb, ksqrt2)
    e = Erf (d)
    a = Add (e, k1)
    m = Mul (hb, a)
    g = Mul (m, khalf)
    o = MatMul (g, w2)
    ob = Add (o, b2)
    y = Add (ob, x)
}
"""


def test_ffn_up_projection_with_gelu_outputs_fp8_into_down_projection():
    rng = np.random.default_rng(0)
    proto = onnx.parser.parse_model(FFN)
    arrays = {
        "w1": 0.3 * rng.standard_normal((16, 32)),
        "b1": 0.1 * rng.standard_normal(32),
        "w2": 0.3 * rng.standard_normal((32, 16)),
        "b2": 0.1 * rng.standard_normal(16),
        "ksqrt2": SQRT2,
        "k1": 1.0,
        "khalf": 0.5,
    }
    proto.graph.initializer.extend(numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in arrays.items())
    calib = {"x": rng.standard_normal((8, 6, 16)).astype(np.float32)}
    q = fq.quantize(proto, calibration_data=calib, config=NCHW)
    onnx.checker.check_model(q, full_check=True)
    up, down = _fp8_nodes(q)
    assert [n.op_type for n in q.graph.node] == ["FP8MatMul", "FP8MatMul"]
    assert _attrs(up)["activation"] == b"Gelu" and _attrs(up)["output_dtype"] == TensorProto.FLOAT8E4M3FN
    assert len(up.input) == 8 and up.input[7]  # y_scale: the down projection's input scale
    assert down.input[0] == up.output[0] and down.input[5] == "x"  # FP8 A, the residual as Z
    qdq = fq.quantize(proto, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    feed = {"x": rng.standard_normal((3, 6, 16)).astype(np.float32)}
    assert sqnr_db(run_float(ir.from_proto(proto), feed)[0], run_float(ir.from_proto(qdq), feed)[0]) > 25.0
