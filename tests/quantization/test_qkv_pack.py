"""PackQkvPass: the Q, K and V projections of one input become one FP8MatMul read by FP8Attention's packed form.

Small one-block graphs of com.fp8ort ops (random FP8 weights, per-column or single scales, biases) run through the
plugin EP's CPU device before and after the pass, bit for bit; the cases that must stay as they are; and the encoder
exports quantized with and without the pass.
"""

from __future__ import annotations

import collections

import ml_dtypes
import numpy as np
import onnx
import onnx_ir as ir
import pytest
import qmodels
from onnx import TensorProto, helper, numpy_helper

import fp8ort
from fp8ort.numerics import sqnr_db
from fp8ort.quantization import qkv

B, S, K, N, HEADS = 2, 5, 16, 12, 3


def _block(
    trans_b: int = 0,
    cross: bool = False,
    other_scale: bool = False,
    bias: tuple[bool, bool, bool] = (True, True, True),
    activation: str = "",
    extra_reader: bool = False,
    seed: int = 0,
) -> onnx.ModelProto:
    """``x [B, S, K]`` (and ``x2`` for ``cross``: K and V from another input) -> three FP8MatMuls -> FP8Attention."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    inits.append(numpy_helper.from_array(np.float32(0.03), "a_scale"))
    inits.append(numpy_helper.from_array(np.float32(0.05), "a_scale2"))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, N])]
    for i, name in enumerate("qkv"):
        shape = (N, K) if trans_b else (K, N)
        w = (rng.standard_normal(shape) * 40).astype(ml_dtypes.float8_e4m3fn)
        inits.append(numpy_helper.from_array(w, f"w_{name}"))
        ws = rng.uniform(0.01, 0.02, N if i != 1 else 1).astype(np.float32)  # K: one scale for every column
        inits.append(numpy_helper.from_array(ws, f"ws_{name}"))
        ins = [
            "x2" if cross and name != "q" else "x",
            f"w_{name}",
            "a_scale2" if other_scale and name == "v" else "a_scale",
            f"ws_{name}",
        ]
        if bias[i]:
            inits.append(numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), f"b_{name}"))
            ins.append(f"b_{name}")
        nodes.append(
            helper.make_node(
                "FP8MatMul",
                ins,
                [f"p_{name}"],
                domain="com.fp8ort",
                transB=trans_b,
                activation=activation if name == "v" else "",
                name=f"proj_{name}",
            )
        )
    if extra_reader:
        outputs.append(helper.make_tensor_value_info("p_k", TensorProto.FLOAT, [B, S, N]))
    nodes.append(
        helper.make_node(
            "FP8Attention", ["p_q", "p_k", "p_v", "mask"], ["y"], domain="com.fp8ort", num_heads=HEADS, name="attention"
        )
    )
    mask = np.zeros((B, 1, 1, S), np.float32)
    mask[1, ..., -2:] = np.finfo(np.float32).min
    inits.append(numpy_helper.from_array(mask, "mask"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, K])]
    if cross:
        inputs.append(helper.make_tensor_value_info("x2", TensorProto.FLOAT, [B, S, K]))
    graph = helper.make_graph(nodes, "block", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.fp8ort", 1)])
    model.ir_version = 10
    return model


def _pack(model: onnx.ModelProto) -> tuple[onnx.ModelProto, bool]:
    m = ir.from_proto(model)
    changed = qkv.PackQkvPass()(m).modified
    ir.passes.common.RemoveUnusedNodesPass()(m)
    return ir.to_proto(m), changed


def _feed(model: onnx.ModelProto, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    return {i.name: (rng.standard_normal((B, S, K)) * 10).astype(np.float32) for i in model.graph.input}


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias", [(True, True, True), (False, False, False)], ids=["bias", "no-bias"])
def test_the_projections_pack_and_the_outputs_stay(trans_b, bias, library):
    model = _block(trans_b=trans_b, bias=bias, seed=trans_b)
    packed, changed = _pack(model)
    assert changed
    onnx.checker.check_model(packed, full_check=True)
    ops = collections.Counter(n.op_type for n in packed.graph.node)
    assert ops == {"FP8MatMul": 1, "FP8Attention": 1}
    attn = next(n for n in packed.graph.node if n.op_type == "FP8Attention")
    assert list(attn.input[1:3]) == ["", ""]
    mm = next(n for n in packed.graph.node if n.op_type == "FP8MatMul")
    weight = next(t for t in packed.graph.initializer if t.name == mm.input[1])
    assert list(weight.dims) == ([3 * N, K] if trans_b else [K, 3 * N])
    # a_scale, W, w_scale (, bias), mask: the three projections' weights, scales and biases are gone
    assert len(packed.graph.initializer) == 4 + int(bias[0])
    feed = _feed(model)
    got, want = (fp8ort.InferenceSession(m, device="cpu", strict=True).run(None, feed)[0] for m in (packed, model))
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cross": True},  # K and V from another tensor
        {"other_scale": True},  # V quantizes its input with another scale
        {"bias": (True, True, False)},  # a zero bias would change the sign of zero outputs
        {"activation": "Relu"},  # not a plain projection
        {"extra_reader": True},  # K's projection is a graph output too
    ],
    ids=lambda k: next(iter(k)),
)
def test_the_projections_stay_where_they_differ(kwargs):
    model = _block(**kwargs)
    packed, changed = _pack(model)
    assert not changed
    assert [n.op_type for n in packed.graph.node] == [n.op_type for n in model.graph.node]


@pytest.mark.parametrize(("name", "exporter"), [("bert", "ts"), ("bert", "dynamo"), ("distilbert", "ts")])
def test_encoder_exports_pack_with_the_same_outputs(name, exporter, tmp_path, library, monkeypatch):
    """The Hugging Face exports quantized with and without the pass: one FP8MatMul fewer per two projections of each
    block, and the outputs through the plugin EP's CPU device are the same bits."""
    pytest.importorskip("transformers", reason="the encoder exports need transformers")
    tm = pytest.importorskip("torch_models", reason="torch_models needs torch")
    src = str(tmp_path / "encoder.onnx")
    tm.export(name, exporter, 17 if exporter == "ts" else 18, src)
    feed = qmodels.padded_encoder_feed(4, padded_row=2, pad=6)
    packed, plain = qmodels.quantized_with_and_without(src, qkv.PackQkvPass, feed, monkeypatch)
    layers = tm.ENCODER_DIMS["layers"]
    count = collections.Counter(n.op_type for n in packed.graph.node)
    assert count["FP8MatMul"] == collections.Counter(n.op_type for n in plain.graph.node)["FP8MatMul"] - 2 * layers
    assert count["FP8Attention"] == layers
    got, want = (fp8ort.InferenceSession(m, device="cpu", strict=True).run(None, feed) for m in (packed, plain))
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize(("exporter", "opset"), [("ts", 17), ("dynamo", 18)])
def test_vision_transformer_attention_fuses_packed(exporter, opset, tmp_path, library):
    """timm's ViT attention (one qkv projection, heads split by reshape/permute/unbind, SDPA's default scale computed
    from Shape(q)[-1]) as both exporters write it: the scale folds, the unbind becomes each tensor's head split
    (SplitQkvHeadsPass), every block is one FP8Attention reading the qkv projection packed, every node runs on the
    plugin EP, and the output stays near the float model's."""
    tm = pytest.importorskip("torch_models", reason="torch_models needs torch")
    src = str(tmp_path / "vit.onnx")
    tm.export("vit", exporter, opset, src)
    rng = np.random.default_rng()
    fp8, report = fp8ort.quantize(
        src, calibration_data={"x": rng.standard_normal((4, 3, 64, 64)).astype(np.float32)}, return_report=True
    )
    count = collections.Counter(n.op_type for n in fp8.graph.node)
    blocks = len(tm.ViT().blocks)
    attention = [n for n in fp8.graph.node if n.op_type == "FP8Attention"]
    assert len(attention) == blocks, report.table()
    assert all(list(n.input[1:3]) == ["", ""] for n in attention)  # Q, K and V: the qkv projection's thirds
    assert not (count["Split"] or count["Squeeze"] or count["Softmax"] or count["MatMul"] or count["Sqrt"]), count
    assert count["FP8MatMul"] == 4 * blocks + 1 and count["FP8Conv"] == 1  # qkv, proj, 2 MLP per block; the head
    assert "left unfused" not in report.table()
    x = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
    import onnxruntime as ort

    want = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = fp8ort.InferenceSession(fp8, device="cpu", strict=True).run(None, {"x": x})[0]
    assert sqnr_db(want, got) >= 25.0


def _unbind_graph(variant: str) -> onnx.ModelProto:
    """``x [B, S, 3*H*D] -> Reshape [B, S, 3, H, D] -> Transpose (2, 0, 3, 1, 4) -> Split -> Squeeze`` x 3, each
    tensor through an Identity to a graph output; ``variant`` breaks one condition of SplitQkvHeadsPass."""
    b, s, h, d = 2, 5, HEADS, 4
    perm = [2, 0, 3, 1, 4] if variant != "perm" else [2, 0, 1, 3, 4]
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=perm),
        helper.make_node("Split", ["t"], ["s0", "s1", "s2"], axis=0, num_outputs=3),
    ]
    outputs = []
    for i in range(3):
        nodes.append(helper.make_node("Squeeze", [f"s{i}", "zero"], [f"q{i}"]))
        if variant == "graph_output" and i == 1:
            outputs.append(helper.make_tensor_value_info("q1", TensorProto.FLOAT, None))
        else:
            nodes.append(helper.make_node("Identity", [f"q{i}"], [f"y{i}"]))
            outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    if variant == "extra_reader":
        nodes.append(helper.make_node("Identity", ["t"], ["t_out"]))
        outputs.append(helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes,
        "unbind",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, s, 3 * h * d])],
        outputs,
        [
            numpy_helper.from_array(np.array([b, s, 3, h, d], np.int64), "shape"),
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("variant", ["plain", "perm", "graph_output", "extra_reader"])
def test_unbind_becomes_the_head_split_of_each_tensor(variant):
    """SplitQkvHeadsPass: the Split and Squeezes become a Slice, Reshape and Transpose per tensor with the same
    values (ORT before and after, exactly); any condition broken leaves the graph as it was."""
    import onnxruntime as ort

    proto = _unbind_graph(variant)
    model = ir.from_proto(proto)
    changed = qkv.SplitQkvHeadsPass()(model).modified
    ops = collections.Counter(n.op_type for n in model.graph)
    if variant != "plain":
        assert not changed and ops["Split"] == 1 and ops["Squeeze"] == 3
        return
    assert changed and not ops["Split"] and not ops["Squeeze"] and ops["Slice"] == 3, ops
    x = np.random.default_rng().standard_normal((2, 5, 3 * HEADS * 4)).astype(np.float32)
    after = ir.serde.serialize_model(model)
    want, got = (ort.InferenceSession(m.SerializeToString()).run(None, {"x": x}) for m in (proto, after))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.tobytes() == w.tobytes()
