"""Graph preparation (prepare.py): the ways exporters write constants, shapes and weights all end up matched."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import qmodels
from conftest import run_float
from onnx import TensorProto, helper, numpy_helper

import fp8ort.quantization as fq
from fp8ort.numerics import sqnr_db
from fp8ort.quantization.prepare import TARGET_OPSET, prepare


def _model(nodes, inputs, outputs, inits, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _fp8(q: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in q.graph.node if n.domain == "com.fp8ort"]


def test_weights_behind_identity_and_constant_nodes_are_constants():
    """TorchScript writes deduplicated initializers behind Identity and scalars/weights as Constant nodes."""
    rng = np.random.default_rng(0)
    w = (0.3 * rng.standard_normal((8, 4, 3, 3))).astype(np.float32)
    b = np.zeros(8, np.float32)
    fc = (0.3 * rng.standard_normal((8 * 36, 5))).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["w_const"], value=numpy_helper.from_array(w)),
        helper.make_node("Identity", ["b_shared"], ["b1"]),
        helper.make_node("Identity", ["b_shared"], ["b2"]),
        helper.make_node("Conv", ["x", "w_const", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Identity", ["w2"], ["w2_id"]),
        helper.make_node("Conv", ["r1", "w2_id", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([-1, 8 * 36], np.int64))),
        helper.make_node("Reshape", ["c2", "shape"], ["flat"]),
        helper.make_node("Identity", ["fc"], ["fc_id"]),
        helper.make_node("MatMul", ["flat", "fc_id"], ["y0"]),
        helper.make_node("Identity", ["y0"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(b, "b_shared"),
        numpy_helper.from_array((0.2 * rng.standard_normal((8, 8, 3, 3))).astype(np.float32), "w2"),
        numpy_helper.from_array(fc, "fc"),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        inits,
    )
    calib = {"x": rng.standard_normal((8, 4, 6, 6)).astype(np.float32)}
    q, rep = fq.quantize(model, calibration_data=calib, return_report=True)
    onnx.checker.check_model(q, full_check=True)
    assert _fp8(q) == ["FP8Conv", "FP8Conv", "FP8MatMul"]
    assert q.graph.output[0].name == "y"  # the graph output keeps its name when its Identity goes
    assert "Identity" in rep.notes[0] and "Constant" in rep.notes[0]
    feed = {"x": rng.standard_normal((2, 4, 6, 6)).astype(np.float32)}
    qdq = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    assert sqnr_db(run_float(ir.from_proto(model), feed)[0], run_float(ir.from_proto(qdq), feed)[0]) > 20.0


def test_matmul_through_a_transposed_weight():
    """``x @ Transpose(W)`` (an export without constant folding): the FP8 weight is W transposed."""
    rng = np.random.default_rng(1)
    w = (0.3 * rng.standard_normal((12, 16))).astype(np.float32)  # [N, K] as torch.nn.Linear stores it
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]), helper.make_node("MatMul", ["x", "wt"], ["y"])]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 12])],
        [numpy_helper.from_array(w, "w")],
    )
    calib = {"x": rng.standard_normal((4, 3, 16)).astype(np.float32)}
    q = fq.quantize(model, calibration_data=calib)
    assert [n.op_type for n in q.graph.node] == ["FP8MatMul"]
    qdq = fq.quantize(model, calibration_data=calib, config=fq.QuantizeConfig(format="qdq"))
    assert sqnr_db(run_float(ir.from_proto(model), calib)[0], run_float(ir.from_proto(qdq), calib)[0]) > 25.0


def test_macs_use_the_calibration_shapes_not_ones():
    """Spatial dims are symbolic in the graph: the MACs come from the calibration batch's real shapes."""
    text = qmodels.RESNETISH.replace("float[N,3,16,16] x", "float[N,3,H,W] x")
    model = qmodels.build(
        text, {v.name: v.const_value.numpy() for v in qmodels.resnetish().graph.initializers.values()}
    )
    calib = {"x": np.random.default_rng(2).standard_normal((4, 3, 16, 16)).astype(np.float32)}
    rep = fq.quantize(model, calibration_data=calib, return_report=True)[1]
    # per sample: conv1 16x16x8 outputs x 27, conv2 and conv3 8x8x8 x 72, depthwise 8x8x8 x 9, fc 10 x 8
    expected = 16 * 16 * 8 * 27 + 2 * 8 * 8 * 8 * 72 + 8 * 8 * 8 * 9 + 10 * 8
    assert rep.total_macs == expected and rep.fp8_macs == expected
    rep32 = fq.quantize(model, calibration_data={"x": np.ones((2, 3, 32, 32), np.float32)}, return_report=True)[1]
    assert rep32.total_macs == 4 * (expected - 10 * 8) + 10 * 8


@pytest.mark.parametrize("opset", [13, 17, 18, 21])
def test_prepared_models_are_alike_across_opsets(opset):
    weights = {v.name: v.const_value.numpy() for v in qmodels.resnetish().graph.initializers.values()}
    text = qmodels.RESNETISH.replace('"" : 21', f'"" : {opset}').replace("ir_version: 10", "ir_version: 7")
    prepared = prepare(qmodels.build(text, weights))
    assert prepared.model.opset_imports[""] == TARGET_OPSET
    assert [n.op_type for n in prepared.model.graph] == [
        "Conv",
        "Relu",
        "MaxPool",
        "Conv",
        "Relu",
        "Conv",
        "Add",
        "Relu",
        "Conv",
        "Relu",
        "GlobalAveragePool",
        "Flatten",
        "Gemm",
    ]
    assert prepared.folded == {"BatchNormalization_1": "Conv_0"}
    assert all(v.shape is not None for n in prepared.model.graph for v in n.outputs)


def test_initializers_listed_as_inputs_are_weights():
    """IR version 3 exports list every initializer as a graph input too."""
    base = qmodels.resnetish()
    proto = ir.to_proto(base)
    proto.ir_version = 3
    proto.graph.input.extend(
        helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in proto.graph.initializer
    )
    q, rep = fq.quantize(proto, calibration_data=qmodels.calib(base), return_report=True)
    assert _fp8(q) == ["FP8Conv"] * 4 + ["FP8GlobalAveragePool", "FP8MatMul"]
    assert [i.name for i in q.graph.input] == ["x"]
    assert "13 initializers removed from the graph inputs" in rep.notes[0]


def test_weight_layers_in_functions_and_subgraphs():
    """Model-local functions are inlined; a Conv inside an If branch stays float with a report line."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((0.3 * rng.standard_normal((4, 4, 1, 1))).astype(np.float32), "w")
    fn = helper.make_function(
        "local",
        "ConvRelu",
        ["a", "k"],
        ["b"],
        [helper.make_node("Conv", ["a", "k"], ["c"]), helper.make_node("Relu", ["c"], ["b"])],
        [helper.make_opsetid("", 17)],
    )
    branch = helper.make_graph(
        [helper.make_node("Conv", ["y1", "w"], ["z"])],
        "then",
        [],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 4, 5, 5])],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["y1"], ["z2"])],
        "else",
        [],
        [helper.make_tensor_value_info("z2", TensorProto.FLOAT, ["N", 4, 5, 5])],
    )
    nodes = [
        helper.make_node("ConvRelu", ["x", "w"], ["y1"], domain="local"),
        helper.make_node("If", ["flag"], ["y"], then_branch=branch, else_branch=other),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 5, 5]),
            helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 5, 5])],
        [w],
    )
    model = helper.make_model(
        graph, functions=[fn], opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    calib = {"x": rng.standard_normal((4, 4, 5, 5)).astype(np.float32), "flag": np.array(True)}
    q, rep = fq.quantize(model, calibration_data=[calib], config=fq.QuantizeConfig(layout="NCHW"), return_report=True)
    onnx.checker.check_model(q, full_check=True)
    assert [n.op_type for n in q.graph.node] == ["FP8Conv", "If"]
    inner = [n for n in rep.nodes if n.op_type == "Conv" and n.status == "float"]
    assert len(inner) == 1 and "then_branch subgraph of If" in inner[0].reason


# ---------------------------------------------------------------- opset conversion and constant folding (onnx only)


def _one_conv_model(opset: int, ir_version: int = 8) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    big = numpy_helper.from_array(rng.standard_normal((9000,)).astype(np.float32), "big")  # past FOLD_INPUT_LIMIT
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceMean", ["c"], ["m"], axes=[2, 3], keepdims=1),  # axes an attribute before opset 18
        helper.make_node("ReduceSum", ["big"], ["s"], keepdims=0),
        helper.make_node("Add", ["m", "s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w, big],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def test_opset_conversion_keeps_external_weights_unread(tmp_path):
    """Opset 13 -> 21 with onnx's converter: ReduceMean's axes become an input, the result computes what the source
    computes, and a weight stored in an external file keeps its external form (the converter never saw it)."""
    from fp8ort.quantization.prepare import convert_opset

    src = _one_conv_model(13)
    path = tmp_path / "m.onnx"
    onnx.save(
        onnx.ModelProto.FromString(src.SerializeToString()),
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="m.data",
        size_threshold=0,
    )
    model = ir.load(path)
    converted = convert_opset(model, TARGET_OPSET)
    assert converted.opset_imports[""] == TARGET_OPSET
    assert isinstance(converted.graph.initializers["big"].const_value, ir.ExternalTensor)
    reduce_mean = next(n for n in converted.graph if n.op_type == "ReduceMean")
    assert len(reduce_mean.inputs) == 2 and "axes" not in reduce_mean.attributes
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    import onnxruntime as ort

    want = ort.InferenceSession(src.SerializeToString()).run(None, {"x": x})[0]
    proto = ir.to_proto(converted)
    onnx.external_data_helper.load_external_data_for_model(proto, str(tmp_path))
    got = ort.InferenceSession(proto.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_constant_folding_is_bounded_before_it_runs():
    """Small constant subgraphs fold; a constant subgraph whose output would be huge (ConstantOfShape of 10^9
    elements) and one reading a large initializer stay as they are, without allocating anything."""
    from fp8ort.quantization.prepare import FoldConstantsPass

    nodes = [
        helper.make_node("Add", ["a", "a"], ["b"]),  # constants: folds
        helper.make_node("Mul", ["x", "b"], ["y"]),
        helper.make_node("ConstantOfShape", ["huge_shape"], ["z"]),  # 10^9 elements: must not run
        helper.make_node("Shape", ["x"], ["sx"]),  # static shape: folds
        helper.make_node("ReduceSum", ["big"], ["s"], keepdims=0),  # input past the limit: stays
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT if n != "sx" else TensorProto.INT64, None)
            for n in ("y", "z", "sx", "s")
        ],
        [
            numpy_helper.from_array(np.ones(4, np.float32), "a"),
            numpy_helper.from_array(np.array([10**9], np.int64), "huge_shape"),
            numpy_helper.from_array(np.ones(9000, np.float32), "big"),
        ],
    )
    # graph outputs are never folded: read them through Identity so that the folding is what is tested
    for out in list(graph.output):
        graph.node.append(helper.make_node("Identity", [out.name], [out.name + "_out"]))
        out.name = out.name + "_out"
    model = ir.from_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    FoldConstantsPass()(model)
    ops = [n.op_type for n in model.graph]
    assert "Add" not in ops and "Shape" not in ops
    assert "ConstantOfShape" in ops and "ReduceSum" in ops
    np.testing.assert_array_equal(model.graph.initializers["b"].const_value.numpy(), np.full(4, 2, np.float32))
    np.testing.assert_array_equal(model.graph.initializers["sx"].const_value.numpy(), np.array([2, 4], np.int64))


@pytest.mark.parametrize(
    ("picker", "inits", "want"),
    [
        # Slice [-1:] of Shape(x) [N, 4, 64]: the static head size (SDPA's default scale in TorchScript exports)
        ("Slice", {"s0": [-1], "e0": [2**63 - 1]}, [64]),
        ("Slice", {"s0": [1], "e0": [3], "ax": [0]}, [4, 64]),
        ("Gather", {"i": 2}, 64),  # a scalar index gives a scalar
        ("Gather", {"i": [2, 1]}, [64, 4]),
        ("Slice", {"s0": [0], "e0": [2]}, None),  # picks N: symbolic, stays
        ("Gather", {"i": 0}, None),
        ("Slice", {"s0": [2], "e0": [0], "ax": [0], "st": [-1]}, [64, 4]),  # a negative step
    ],
)
def test_shape_picks_of_static_dimensions_fold(picker, inits, want):
    """Slice or Gather of Shape(x) folds to a constant when every dimension it picks is static, whatever the others
    are; the value has the operator's shape (a scalar index: a scalar). Picking a symbolic dimension keeps the nodes."""
    from fp8ort.quantization.prepare import FoldConstantsPass

    names = {"s0": "starts", "e0": "ends", "ax": "axes", "st": "steps"}
    if picker == "Slice":
        ins = ["sx", *(k for k in ("s0", "e0", "ax", "st") if k in inits)]
        assert [names[k] for k in ins[1:]] == ["starts", "ends", "axes", "steps"][: len(ins) - 1]
    else:
        ins = ["sx", "i"]
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node(picker, ins, ["p"]),
        helper.make_node("Identity", ["p"], ["p_out"]),  # graph outputs are never folded
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 64])],
        [helper.make_tensor_value_info("p_out", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in inits.items()],
    )
    model = ir.from_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    FoldConstantsPass()(model)
    ops = [n.op_type for n in model.graph]
    if want is None:
        assert picker in ops and "Shape" in ops
        return
    assert picker not in ops
    got = model.graph.initializers["p"].const_value.numpy()
    assert got.dtype == np.int64 and got.shape == np.shape(want)
    np.testing.assert_array_equal(got, np.array(want, np.int64))
    import onnxruntime as ort

    batch = np.zeros((3, 4, 64), np.float32)  # and the folded value is what ORT computes for any batch
    sess = ort.InferenceSession(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()
    )
    np.testing.assert_array_equal(sess.run(None, {"x": batch})[0], got)


# ------------------------------------------------------------------------------------ one quantize, several readers


def test_shared_input_is_quantized_once():
    """Three FP8MatMuls reading one float tensor with the same scale get one FP8Quantize; a reader with another scale
    keeps its own quantization; the outputs do not change (FP8 A is the contract's already-quantized input)."""
    from fp8ort import emulate, ops
    from fp8ort import numerics as nx
    from fp8ort.quantization.shared_input import ShareInputQuantizePass

    rng = np.random.default_rng(3)
    w = [nx.quantize(rng.standard_normal((8, 8)).astype(np.float32), np.float32(0.01), nx.E4M3FN) for _ in range(4)]
    inits = [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.float32(0.07), "s2")]
    inits += [numpy_helper.from_array(np.full(1, 0.01, np.float32), "ws")]
    nodes = []
    for i, wi in enumerate(w):
        t = numpy_helper.from_array(wi.view(np.uint8), f"w{i}")
        t.data_type = TensorProto.FLOAT8E4M3FN
        inits.append(t)
        nodes.append(
            helper.make_node("FP8MatMul", ["x", f"w{i}", "s" if i < 3 else "s2", "ws"], [f"y{i}"], domain="com.fp8ort")
        )
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [4, 8]) for i in range(4)],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=ops.OPSET_IMPORTS, ir_version=ops.IR_VERSION)
    model = ir.from_proto(proto)
    assert ShareInputQuantizePass()(model).modified
    quantizes = [n for n in model.graph if n.op_type == "FP8Quantize"]
    assert len(quantizes) == 1 and quantizes[0].inputs[1].name == "s"
    readers = [n for n in model.graph if n.op_type == "FP8MatMul"]
    assert [r.inputs[0].dtype for r in readers] == [ir.DataType.FLOAT8E4M3FN] * 3 + [ir.DataType.FLOAT]
    shared = ir.to_proto(model)
    onnx.checker.check_model(shared, full_check=True)
    x = (rng.standard_normal((4, 8)) * 4).astype(np.float32)
    for a, b in zip(emulate.run_reference(proto, {"x": x}), emulate.run_reference(shared, {"x": x})):
        assert a.tobytes() == b.tobytes()


def _scaled_layer(case: str) -> onnx.ModelProto:
    """A weight layer, then ``Mul`` by a constant: ``conv`` (c of [C, 1, 1]), ``matmul`` (c of [C] after the bias
    Add), ``transposed`` (timm's permute to NCHW between the two), and cases that must not fold: ``spatial`` (c varies
    along W), ``shared`` (the conv output has another reader)."""
    rng = np.random.default_rng()
    c = 6
    inits = [numpy_helper.from_array(rng.uniform(0.05, 2.0, c).astype(np.float32), "gamma_flat")]
    if case in ("conv", "spatial", "shared"):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 5, 5])
        inits += [
            numpy_helper.from_array(rng.standard_normal((c, 4, 3, 3)).astype(np.float32), "w"),
            numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b"),
        ]
        gamma = rng.uniform(0.05, 2.0, (c, 1, 5) if case == "spatial" else (c, 1, 1)).astype(np.float32)
        inits.append(numpy_helper.from_array(gamma, "gamma"))
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["v"], pads=[1, 1, 1, 1])]
    else:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 5, 4])
        inits += [
            numpy_helper.from_array(rng.standard_normal((4, c)).astype(np.float32), "w"),
            numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b"),
            numpy_helper.from_array(rng.uniform(0.05, 2.0, (1, c, 1, 1)).astype(np.float32), "gamma"),
        ]
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["v"])]
        if case == "transposed":
            nodes.append(helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 3, 1, 2]))
    data = "vt" if case == "transposed" else "v"
    nodes.append(helper.make_node("Mul", ["gamma_flat" if case == "matmul" else "gamma", data], ["y0"]))
    nodes.append(helper.make_node("Relu", ["y0"], ["y"]))
    dims = ["N", 5, 5, c] if case == "matmul" else ["N", c, 5, 5]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)]
    if case == "shared":
        nodes.append(helper.make_node("Sigmoid", ["v"], ["other"]))
        outputs.append(helper.make_tensor_value_info("other", TensorProto.FLOAT, dims))
    return _model(nodes, [x], outputs, inits)


@pytest.mark.parametrize("case", ["conv", "matmul", "transposed", "spatial", "shared"])
def test_channel_scale_folds_into_the_layer_before(case):
    """A constant per-output-channel Mul after a Conv or MatMul + bias (ConvNeXt's layer scale) folds into the
    layer's weight and bias (same outputs up to float32 rounding, a report line); a scale along another axis, or a
    layer output read elsewhere, stays."""
    import onnxruntime as ort

    src = _scaled_layer(case)
    prepared = prepare(ir.from_proto(src))
    ops = [n.op_type for n in prepared.model.graph]
    if case in ("spatial", "shared"):
        assert "Mul" in ops and not prepared.scaled
        return
    assert "Mul" not in ops and list(prepared.scaled.values()) == [n.name for n in prepared.model.graph][:1]
    assert "per-channel scale" in prepared.note()
    shape = (2, 4, 5, 5) if case == "conv" else (2, 5, 5, 4)
    x = np.random.default_rng().standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(src.SerializeToString()).run(None, {"x": x})[0]
    got = ort.InferenceSession(ir.serde.serialize_model(prepared.model).SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.INT4, TensorProto.UINT8])
def test_tensor_bytes_that_do_not_fit_the_shape_are_refused(dtype):
    """An initializer whose raw bytes do not hold its declared shape (a corrupt file; for sub-byte types reading it
    would allocate whatever the shape claims) is refused by name before anything reads it; the right size passes."""
    import math

    bits = {TensorProto.FLOAT: 32, TensorProto.INT4: 4, TensorProto.UINT8: 8}[dtype]
    for dims, ok in (([3, 5], True), ([3, 5, 1 << 40], False)):
        w = onnx.TensorProto(name="w", data_type=dtype, dims=dims)
        w.raw_data = bytes(math.ceil(15 * bits / 8))
        graph = helper.make_graph(
            [helper.make_node("Identity", ["w"], ["y"])],
            "g",
            [],
            [helper.make_tensor_value_info("y", dtype, None)],
            [w],
        )
        model = ir.from_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
        if ok:
            fq.prepare.check_model(model)
        else:
            with pytest.raises(fq.QuantizeError, match="'w'.*needs .* bytes of data but the file holds"):
                fq.prepare.check_model(model)
