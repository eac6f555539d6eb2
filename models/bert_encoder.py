"""Write a small BERT-style encoder (MatMul/Gemm-heavy; random weights, onnx helpers, no torch).

    python models/bert_encoder.py -o bert_tiny.onnx [--layers 4 --hidden 256 --seq 128]

Embedding lookup (Gather), per layer: Q/K/V projections (MatMul+bias), scaled-dot-product attention
(activation x activation MatMuls stay float), output projection + residual, LayerNormalization, a GELU MLP
(MatMul+bias, Gelu, MatMul+bias+residual), and a pooled classifier (Gemm).
"""

from __future__ import annotations

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def bert_encoder(
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    seq: int = 128,
    vocab: int = 1000,
    classes: int = 8,
    seed: int = 0,
) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def init(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def dense(x: str, k: int, n: int, name: str) -> str:
        w = init(f"{name}.weight", (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32))
        b = init(f"{name}.bias", (0.02 * rng.standard_normal(n)).astype(np.float32))
        nodes.append(helper.make_node("MatMul", [x, w], [f"{name}.mm"], name=f"{name}/MatMul"))
        nodes.append(helper.make_node("Add", [f"{name}.mm", b], [f"{name}.out"], name=f"{name}/Add"))
        return f"{name}.out"

    def layernorm(x: str, name: str) -> str:
        g = init(f"{name}.g", np.ones(hidden, np.float32))
        b = init(f"{name}.b", np.zeros(hidden, np.float32))
        nodes.append(helper.make_node("LayerNormalization", [x, g, b], [f"{name}.out"], name=name, axis=-1))
        return f"{name}.out"

    dh = hidden // heads
    init("emb", (0.5 * rng.standard_normal((vocab, hidden))).astype(np.float32))
    init("heads_shape", np.array([0, seq, heads, dh], np.int64))
    init("merge_shape", np.array([0, seq, hidden], np.int64))
    init("inv_sqrt_dh", np.array(1.0 / np.sqrt(dh), np.float32))
    nodes.append(helper.make_node("Gather", ["emb", "input_ids"], ["x0"], name="embed/Gather"))
    x = layernorm("x0", "embed/LayerNorm")
    for i in range(layers):
        p = f"layer{i}"
        q, k, v = (dense(x, hidden, hidden, f"{p}.attn.{t}") for t in "qkv")
        for t, src in (("q", q), ("k", k), ("v", v)):
            nodes.append(helper.make_node("Reshape", [src, "heads_shape"], [f"{p}.{t}4"], name=f"{p}/{t}/Reshape"))
        nodes.append(helper.make_node("Transpose", [f"{p}.q4"], [f"{p}.qh"], perm=[0, 2, 1, 3], name=f"{p}/qT"))
        nodes.append(helper.make_node("Transpose", [f"{p}.k4"], [f"{p}.kh"], perm=[0, 2, 3, 1], name=f"{p}/kT"))
        nodes.append(helper.make_node("Transpose", [f"{p}.v4"], [f"{p}.vh"], perm=[0, 2, 1, 3], name=f"{p}/vT"))
        nodes.append(helper.make_node("MatMul", [f"{p}.qh", f"{p}.kh"], [f"{p}.s"], name=f"{p}/scores/MatMul"))
        nodes.append(helper.make_node("Mul", [f"{p}.s", "inv_sqrt_dh"], [f"{p}.ss"], name=f"{p}/scale"))
        nodes.append(helper.make_node("Softmax", [f"{p}.ss"], [f"{p}.a"], axis=-1, name=f"{p}/Softmax"))
        nodes.append(helper.make_node("MatMul", [f"{p}.a", f"{p}.vh"], [f"{p}.ctx"], name=f"{p}/context/MatMul"))
        nodes.append(helper.make_node("Transpose", [f"{p}.ctx"], [f"{p}.ctxT"], perm=[0, 2, 1, 3], name=f"{p}/cT"))
        nodes.append(helper.make_node("Reshape", [f"{p}.ctxT", "merge_shape"], [f"{p}.ctx2"], name=f"{p}/merge"))
        o = dense(f"{p}.ctx2", hidden, hidden, f"{p}.attn.out")
        nodes.append(helper.make_node("Add", [o, x], [f"{p}.res1"], name=f"{p}/attn/residual"))
        x = layernorm(f"{p}.res1", f"{p}/ln1")
        h = dense(x, hidden, 4 * hidden, f"{p}.mlp.fc1")
        nodes.append(helper.make_node("Gelu", [h], [f"{p}.gelu"], name=f"{p}/Gelu"))
        o = dense(f"{p}.gelu", 4 * hidden, hidden, f"{p}.mlp.fc2")
        nodes.append(helper.make_node("Add", [o, x], [f"{p}.res2"], name=f"{p}/mlp/residual"))
        x = layernorm(f"{p}.res2", f"{p}/ln2")
    nodes.append(helper.make_node("ReduceMean", [x, "axis1"], ["pooled"], keepdims=0, name="pool/ReduceMean"))
    init("axis1", np.array([1], np.int64))
    init("cls.weight", (rng.standard_normal((classes, hidden)) / np.sqrt(hidden)).astype(np.float32))
    init("cls.bias", np.zeros(classes, np.float32))
    nodes.append(
        helper.make_node("Gemm", ["pooled", "cls.weight", "cls.bias"], ["logits"], transB=1, name="classifier/Gemm")
    )
    graph = helper.make_graph(
        nodes,
        "bert_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="fp8ort.models")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="bert_encoder.onnx")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--calibration", help="also write random token ids to this .npz (input name 'input_ids')")
    args = p.parse_args()
    onnx.save(bert_encoder(args.layers, args.hidden, seq=args.seq), args.output)
    print(f"wrote {args.output}")
    if args.calibration:
        ids = np.random.default_rng(0).integers(0, 1000, (32, args.seq)).astype(np.int64)
        np.savez(args.calibration, input_ids=ids)
        print(f"wrote {args.calibration}")


if __name__ == "__main__":
    main()
