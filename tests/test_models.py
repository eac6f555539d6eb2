"""Whole ONNX models that chain the ops, FP8 tensors flowing between them, run by onnxruntime's CPU route."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper

from fp8ort import numerics as nx
from fp8ort import ops, reference

from ._util import activations, fp8_weights

E4M3 = TensorProto.FLOAT8E4M3FN


def _init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def test_residual_block_fp8_end_to_end(rng, library):
    """conv(X)->FP8, conv(FP8, residual FP8, Relu)->FP8, FP8MatMul over channels, FP8Dequantize-free float out.

    No value_info is declared for the intermediate FP8 tensors: the ops' shape inference types them.
    """
    n, c, h, w = 2, 8, 9, 9
    x = activations(rng, (n, h, w, c), 0.05, np.float32)
    w1, s1 = fp8_weights(rng, (c, c, 3, 3))
    w2, s2 = fp8_weights(rng, (c, 1, 3, 3))  # depthwise
    w3, s3 = fp8_weights(rng, (c, 5), axis=1)
    xs, y1s, y2s = np.float32(0.05), np.float32(0.4), np.float32(0.6)
    b1 = rng.standard_normal(c).astype(np.float32)
    nodes = [
        helper.make_node(
            "FP8Conv",
            ["X", "W1", "xs", "s1", "b1", "", "", "y1s"],
            ["Y1"],
            domain=ops.DOMAIN,
            pads=[1, 1, 1, 1],
            activation="Relu",
            layout="NHWC",
            output_dtype=E4M3,
            name="conv1",
        ),
        helper.make_node(
            "FP8Conv",
            ["Y1", "W2", "y1s", "s2", "", "Y1", "y1s", "y2s"],
            ["Y2"],
            domain=ops.DOMAIN,
            pads=[1, 1, 1, 1],
            group=c,
            activation="Relu",
            layout="NHWC",
            output_dtype=E4M3,
            name="dw2",
        ),
        helper.make_node("FP8MatMul", ["Y2", "W3", "y2s", "s3"], ["Y"], domain=ops.DOMAIN, name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, h, w, c])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, h, w, 5])],
        [
            _init("W1", w1),
            _init("s1", s1),
            _init("b1", b1),
            _init("W2", w2),
            _init("s2", s2),
            _init("W3", w3),
            _init("s3", s3),
            _init("xs", xs),
            _init("y1s", y1s),
            _init("y2s", y2s),
        ],
    )
    model = helper.make_model(graph, opset_imports=ops.OPSET_IMPORTS, ir_version=ops.IR_VERSION)
    checker.check_model(model)

    sess = ops.session(model, library)
    got = ops.run(sess, {"X": x})[0]

    y1 = reference.fp8_conv(
        x, w1, xs, s1, b1, y_scale=y1s, pads=(1, 1, 1, 1), activation="Relu", layout="NHWC", output_dtype=E4M3
    )
    y2 = reference.fp8_conv(
        y1,
        w2,
        y1s,
        s2,
        None,
        y1,
        y1s,
        y2s,
        pads=(1, 1, 1, 1),
        group=c,
        activation="Relu",
        layout="NHWC",
        output_dtype=E4M3,
    )
    expected = reference.fp8_matmul(y2, w3, y2s, s3)
    np.testing.assert_array_equal(got, expected)
    assert nx.sqnr_db(expected, got) == float("inf")


def test_dynamic_batch_shape_inference(rng, library):
    """A symbolic batch dimension flows through the ops' shape inference and any batch size runs."""
    w, s = fp8_weights(rng, (6, 3, 3, 3))
    node = helper.make_node(
        "FP8Conv",
        ["X", "W", "xs", "s"],
        ["Y"],
        domain=ops.DOMAIN,
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        output_dtype=TensorProto.FLOAT16,
    )
    graph = helper.make_graph(
        [node],
        "dyn",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3, 11, 11])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, None)],
        [_init("W", w), _init("s", s), _init("xs", np.float32(0.03))],
    )
    model = helper.make_model(graph, opset_imports=ops.OPSET_IMPORTS, ir_version=ops.IR_VERSION)
    sess = ops.session(model, library)
    out = sess.get_outputs()[0]
    assert out.type == "tensor(float16)" and out.shape == ["batch", 6, 6, 6]
    for batch in (1, 3):
        x = activations(rng, (batch, 3, 11, 11), 0.03, np.float32)
        got = ops.run(sess, {"X": x})[0]
        want = reference.fp8_conv(
            x, w, np.float32(0.03), s, strides=(2, 2), pads=(1, 1, 1, 1), output_dtype=TensorProto.FLOAT16
        )
        np.testing.assert_array_equal(got, want)


def test_concurrent_runs_of_one_session(rng, library):
    """ORT may call a kernel from several threads at once: results stay exact under concurrent Run calls."""
    from concurrent.futures import ThreadPoolExecutor

    w, s = fp8_weights(rng, (16, 8, 3, 3))
    inputs = {
        "X": activations(rng, (1, 8, 20, 20), 0.05, np.float32),
        "W": w,
        "x_scale": np.float32(0.05),
        "w_scale": s,
        "y_scale": np.float32(0.3),
    }
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=E4M3, pads=[1, 1, 1, 1], activation="Relu")
    sess = ops.session(model, library, threads=2)
    xs = [activations(rng, (1, 8, 20, 20), 0.05, np.float32) for _ in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(lambda x: ops.run(sess, {"X": x})[0], xs))
    for x, got in zip(xs, outs, strict=True):
        want = reference.fp8_conv(
            x, w, np.float32(0.05), s, y_scale=np.float32(0.3), pads=(1, 1, 1, 1), activation="Relu", output_dtype=E4M3
        )
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
