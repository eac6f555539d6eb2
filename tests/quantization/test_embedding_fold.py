"""FoldConstantLookupPass: a token-type lookup with constant ids folds into the word table, with the same outputs.

Small graphs in the Hugging Face exporters' embedding form (batch and sequence symbolic): the token-type ids are a
zeros buffer sliced to the sequence length, gathered at the positions and expanded to ``Shape(input_ids)``; the
word and token-type lookups are added. Each case runs on onnxruntime's CPU EP before and after the pass.
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnx_ir as ir
import onnx_ir.passes.common
import onnxruntime as ort
import pytest
import qmodels
from onnx import TensorProto, helper, numpy_helper

from fp8ort.quantization.embedding import FoldConstantLookupPass

VOCAB, TYPES, H, MAX_POS = 50, 2, 8, 32


def _embedding_model(
    type_ids: np.ndarray | None = None, target: str = "ids", extra_reader: bool = False, mask_dims=None
) -> onnx.ModelProto:
    """``target``: what the token-type ids are expanded to: "ids" (Shape(input_ids) through the exporters' Gather /
    Unsqueeze / Concat / Reshape / Equal / Where), or "constant" (a fixed [2, 1] shape: not provably ids' shape).
    ``mask_dims``: the shapes come from a second input ``attention_mask`` of these declared dimensions instead, as
    the dynamo exporter writes it."""
    rng = np.random.default_rng(0)
    buffer = np.zeros((1, MAX_POS), np.int64) if type_ids is None else type_ids
    inits = [
        numpy_helper.from_array(rng.standard_normal((VOCAB, H)).astype(np.float32), "word"),
        numpy_helper.from_array(rng.standard_normal((TYPES, H)).astype(np.float32), "token_type"),
        numpy_helper.from_array(rng.standard_normal((MAX_POS, H)).astype(np.float32), "position"),
        numpy_helper.from_array(np.arange(MAX_POS, dtype=np.int64)[None], "position_ids"),
        numpy_helper.from_array(buffer, "type_buffer"),
        numpy_helper.from_array(np.int64(0), "i0"),
        numpy_helper.from_array(np.int64(1), "i1"),
        numpy_helper.from_array(np.array([0], np.int64), "zero1"),
        numpy_helper.from_array(np.array([1], np.int64), "one1"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
        numpy_helper.from_array(np.array([-1, -1], np.int64), "minus1x2"),
        numpy_helper.from_array(np.array([1, 1], np.int64), "ones2"),
        numpy_helper.from_array(np.array([2, 1], np.int64), "fixed_shape"),
    ]
    nodes = [
        helper.make_node("Shape", ["input_ids" if mask_dims is None else "attention_mask"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["batch"], axis=0),
        helper.make_node("Gather", ["shape", "i1"], ["seq"], axis=0),
        helper.make_node("Unsqueeze", ["seq", "zero1"], ["seq1"]),
        helper.make_node("Slice", ["position_ids", "zero1", "seq1", "one1", "one1"], ["positions"]),
        helper.make_node("Expand", ["type_buffer", "ones2"], ["buffered"]),
        helper.make_node("GatherElements", ["buffered", "positions"], ["types_1s"], axis=1),
    ]
    if target == "ids":
        nodes += [
            helper.make_node("Unsqueeze", ["batch", "zero1"], ["batch1"]),
            helper.make_node("Concat", ["batch1", "seq1"], ["bs"], axis=0),
            helper.make_node("Reshape", ["bs", "minus1"], ["bs_flat"]),
            helper.make_node("Equal", ["bs_flat", "minus1x2"], ["is_minus1"]),
            helper.make_node("Where", ["is_minus1", "ones2", "bs_flat"], ["type_shape"]),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["fixed_shape"], ["type_shape"]))
    nodes += [
        helper.make_node("Expand", ["types_1s", "type_shape"], ["type_ids"]),
        helper.make_node("Gather", ["word", "input_ids"], ["w"], axis=0),
        helper.make_node("Gather", ["token_type", "type_ids"], ["t"], axis=0),
        helper.make_node("Add", ["w", "t"], ["wt"]),
        helper.make_node("Gather", ["position", "positions"], ["p"], axis=0),
        helper.make_node("Add", ["wt", "p"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", H])]
    if extra_reader:  # the token-type lookup is also read elsewhere: it must stay
        outputs.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, ["B", "S", H]))
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "S"])]
    if mask_dims is not None:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, mask_dims))
    graph = helper.make_graph(nodes, "embeddings", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model)


def _apply(model: onnx.ModelProto) -> onnx.ModelProto:
    m = ir.from_proto(model)
    FoldConstantLookupPass()(m)
    onnx_ir.passes.common.RemoveUnusedNodesPass()(m)
    return ir.to_proto(m)


def _run(model: onnx.ModelProto, ids: np.ndarray) -> list[np.ndarray]:
    feed = {"input_ids": ids}
    if len(model.graph.input) > 1:
        feed["attention_mask"] = np.ones_like(ids)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)


def _ids(batch: int, seq: int) -> np.ndarray:
    return np.random.default_rng(batch * 100 + seq).integers(0, VOCAB, (batch, seq)).astype(np.int64)


@pytest.mark.parametrize("type_id, mask_dims", [(0, None), (1, None), (0, ["B", "S"])], ids=["0", "1", "mask"])
def test_the_token_type_lookup_folds_and_the_outputs_stay(type_id, mask_dims):
    buffer = np.full((1, MAX_POS), type_id, np.int64)
    before = _embedding_model(buffer, mask_dims=mask_dims)
    after = _apply(before)
    onnx.checker.check_model(after, full_check=True)
    ops = collections.Counter(n.op_type for n in after.graph.node)
    # word + position lookups and their Add; Shape/Gather/Unsqueeze/Slice for the positions stay
    assert ops["Add"] == 1 and ops["Expand"] == 0 and ops["GatherElements"] == 0 and ops["Where"] == 0
    assert "token_type" not in {t.name for t in after.graph.initializer}
    for batch, seq in [(1, 1), (3, 7), (2, MAX_POS)]:  # any batch and sequence length, one included
        ids = _ids(batch, seq)
        for want, got in zip(_run(before, ids), _run(after, ids)):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "case",
    ["mixed_ids", "fixed_target", "extra_reader", "mask_of_other_dims"],
)
def test_the_lookup_stays_where_it_is_not_provably_a_constant_row(case):
    if case == "mixed_ids":  # one position has another type id: the rows differ
        buffer = np.zeros((1, MAX_POS), np.int64)
        buffer[0, 3] = 1
        before = _embedding_model(buffer)
    elif case == "fixed_target":  # expanded to a fixed [2, 1]: its shape is not the ids' shape
        before = _embedding_model(target="constant")
    elif case == "extra_reader":
        before = _embedding_model(extra_reader=True)
    else:  # the shapes come from an input declared [B, T]: T is not the ids' S
        before = _embedding_model(mask_dims=["B", "T"])
    after = _apply(before)
    assert collections.Counter(n.op_type for n in after.graph.node)["Add"] == 2
    assert "token_type" in {t.name for t in after.graph.initializer}


def test_bert_export_folds_with_the_same_outputs(tmp_path, library, monkeypatch):
    """The Hugging Face BERT export (TorchScript exporter) quantized with and without the pass: the token-type lookup
    goes, and the outputs through the plugin EP's CPU device are the same bits."""
    pytest.importorskip("transformers", reason="the BERT export needs transformers")
    tm = pytest.importorskip("torch_models", reason="torch_models needs torch")
    import fp8ort
    from fp8ort.quantization import embedding

    src = str(tmp_path / "bert.onnx")
    tm.export("bert", "ts", 17, src)
    feed = qmodels.padded_encoder_feed(3, padded_row=1, pad=5)
    folded, plain = qmodels.quantized_with_and_without(src, embedding.FoldConstantLookupPass, feed, monkeypatch)
    assert len(folded.graph.node) < len(plain.graph.node)
    tables = {t.name for t in folded.graph.initializer}
    assert not any("token_type" in n and "plus" not in n for n in tables)
    got, want = (fp8ort.InferenceSession(m, device="cpu", strict=True).run(None, feed) for m in (folded, plain))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
