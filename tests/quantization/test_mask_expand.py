"""DropMaskExpandPass: the Expand of an attention mask that FP8Attention broadcasts itself goes, with the same output.

Small graphs in the exporters' mask form: ``attention_mask [B, S]`` unsqueezed to ``[B, 1, 1, S]``, expanded to
``[B, 1, S, S]``, then Cast, ``1 - m``, Cast to bool (twice, as the exports write it) and a Where that puts the float
minimum where the mask is 0, read as FP8Attention's attn_bias. Run on the plugin EP's CPU device before and after.
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import fp8ort
from fp8ort.quantization.mask import DropMaskExpandPass

B, S, HEADS, D = 2, 5, 2, 4
MIN = np.float32(np.finfo(np.float32).min)


def _mask_model(layers: int = 1, extra_reader: bool = False, full_constant: bool = False) -> onnx.ModelProto:
    f = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array([1, 2], np.int64), "axes"),
        numpy_helper.from_array(np.array([B, 1, S, S], np.int64), "shape"),
        numpy_helper.from_array(np.float32(1.0), "one"),
        numpy_helper.from_array(MIN, "min"),
        numpy_helper.from_array(np.zeros((1, 1, S, S), np.float32), "zeros"),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["attention_mask", "axes"], ["m4"]),
        helper.make_node("Expand", ["m4", "shape"], ["mx"]),
        helper.make_node("Cast", ["mx"], ["mf"], to=f),
        helper.make_node("Sub", ["one", "mf"], ["inv"]),
    ]
    last = "inv"
    if full_constant:  # a constant of the expanded shape: the Expand cannot go
        nodes.append(helper.make_node("Add", ["inv", "zeros"], ["inv2"]))
        last = "inv2"
    nodes += [
        helper.make_node("Cast", [last], ["c1"], to=TensorProto.BOOL),
        helper.make_node("Cast", ["c1"], ["c2"], to=TensorProto.BOOL),
    ]
    outputs = [helper.make_tensor_value_info(f"y{i}", f, [B, S, HEADS * D]) for i in range(layers)]
    for i in range(layers):  # a Where per layer, as the encoders write it
        nodes.append(helper.make_node("Where", ["c2", "min", last], [f"bias{i}"]))
        nodes.append(
            helper.make_node(
                "FP8Attention", ["q", "k", "v", f"bias{i}"], [f"y{i}"], domain="com.fp8ort", num_heads=HEADS
            )
        )
    if extra_reader:  # the expanded mask is also a graph output: it must keep its shape
        outputs.append(helper.make_tensor_value_info("inv", f, [B, 1, S, S]))
    inputs = [helper.make_tensor_value_info(n, f, [B, S, HEADS * D]) for n in ("q", "k", "v")]
    inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [B, S]))
    graph = helper.make_graph(nodes, "mask", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.fp8ort", 1)])
    return onnx.shape_inference.infer_shapes(model)


def _apply(model: onnx.ModelProto) -> onnx.ModelProto:
    m = ir.from_proto(model)
    DropMaskExpandPass()(m)
    ir.passes.common.RemoveUnusedNodesPass()(m)
    return ir.to_proto(m)


def _run(model: onnx.ModelProto, feed: dict) -> list[np.ndarray]:
    return fp8ort.InferenceSession(model, device="cpu", strict=True).run(None, feed)


def _feed(rng) -> dict[str, np.ndarray]:
    feed = {n: rng.standard_normal((B, S, HEADS * D)).astype(np.float32) for n in ("q", "k", "v")}
    mask = np.ones((B, S), np.int64)
    mask[1, 3:] = 0  # a padded sequence
    feed["attention_mask"] = mask
    return feed


@pytest.mark.parametrize("layers", [1, 3])
def test_the_expand_goes_and_the_outputs_stay(layers, library):
    rng = np.random.default_rng(layers)
    before = _mask_model(layers)
    after = _apply(before)
    ops = collections.Counter(n.op_type for n in after.graph.node)
    assert ops["Expand"] == 0 and ops["Cast"] == 2  # the Expand and the bool-to-bool Cast are gone
    onnx.checker.check_model(after, full_check=True)
    feed = _feed(rng)
    for want, got in zip(_run(before, feed), _run(after, feed)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", ["extra_reader", "full_constant"])
def test_the_expand_stays_where_its_shape_is_seen(case, library):
    before = _mask_model(**{case: True})
    after = _apply(before)
    assert collections.Counter(n.op_type for n in after.graph.node)["Expand"] == 1
    feed = _feed(np.random.default_rng(7))
    for want, got in zip(_run(before, feed), _run(after, feed)):
        np.testing.assert_array_equal(got, want)
