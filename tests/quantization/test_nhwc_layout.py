"""NHWC output of the quantizer runs in ORT and equals the NCHW model bit for bit (the CPU kernels sum exactly)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import qmodels
from conftest import library_path

import fp8ort
from fp8ort import ops


@pytest.mark.parametrize("build", [qmodels.bottleneck, qmodels.resnetish], ids=["downsample-block", "resnetish"])
def test_nhwc_model_loads_and_matches_nchw(build):
    lib = library_path()
    if lib is None:
        pytest.skip("libfp8ort.so is not built")
    model = build()
    calib = qmodels.calib(model)
    outs = {}
    for layout in ("NCHW", "NHWC"):
        q = fp8ort.quantize(ir.to_proto(build()), calibration_data=calib, config=fp8ort.QuantizeConfig(layout=layout))
        onnx.checker.check_model(q, full_check=True)
        if layout == "NHWC":
            # every Transpose reads a float or FP8 tensor of the declared type: ORT loads the model
            assert sum(n.op_type == "Transpose" for n in q.graph.node) <= 4
        feed = {k: v[:2] for k, v in calib.items()}
        outs[layout] = ops.run(ops.session(q, lib), feed)
    for a, b in zip(outs["NCHW"], outs["NHWC"], strict=True):
        np.testing.assert_array_equal(a, b)


SQUEEZE_EXCITE = """
<ir_version: 10, opset_import: ["" : 17]>
se (float[N,8,12,12] x) => (float[N,10] y) {
    c1 = Conv <pads=[1,1,1,1]> (x, w1, b1)
    a1 = Sigmoid (c1)
    h = Mul (c1, a1)
    p = GlobalAveragePool (h)
    s1 = Conv (p, ws1, bs1)
    r1 = Relu (s1)
    s2 = Conv (r1, ws2, bs2)
    g = Sigmoid (s2)
    hs = Mul (h, g)
    hh = Mul (hs, half)
    c2 = Conv <pads=[1,1,1,1]> (hh, w2, b2)
    q = GlobalAveragePool (c2)
    f = Flatten (q)
    y = Gemm <transB=1> (f, wfc, bfc)
}
"""


# The same block as exporters write ``x.mean((2, 3), keepdim=True)`` (timm's squeeze-excitation) and a head that
# averages without keepdims: ReduceMean with axes as an input (opset 18).
SQUEEZE_EXCITE_MEAN = (
    SQUEEZE_EXCITE.replace('"" : 17', '"" : 18')
    .replace("p = GlobalAveragePool (h)", "p = ReduceMean <keepdims=1> (h, hw)")
    .replace("q = GlobalAveragePool (c2)\n    f = Flatten (q)", "f = ReduceMean <keepdims=0> (c2, hw)")
)


@pytest.mark.parametrize(
    "text, transposes",
    [(SQUEEZE_EXCITE, 2), (SQUEEZE_EXCITE_MEAN, 1)],
    ids=["global_average_pool", "reduce_mean"],
)
def test_nhwc_squeeze_excitation_stays_channels_last(text, transposes):
    """GlobalAveragePool / ReduceMean and the SE scale Mul run on the NHWC tensors: only the model's boundary
    transposes are left (NCHW input in; pooled features out, unless the mean drops H and W itself), and the output
    is bit-identical to the NCHW model's."""
    lib = library_path()
    if lib is None:
        pytest.skip("libfp8ort.so is not built")
    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    weights = {
        "w1": w(8, 8, 3, 3),
        "b1": w(8),
        "ws1": w(4, 8, 1, 1),
        "bs1": w(4),
        "ws2": w(8, 4, 1, 1),
        "bs2": w(8),
        "half": np.array(0.5, np.float32),
        "w2": w(8, 8, 3, 3),
        "b2": w(8),
        "wfc": w(10, 8),
        "bfc": w(10),
        "hw": np.array([2, 3], np.int64),
    }
    calib = {"x": rng.standard_normal((8, 8, 12, 12)).astype(np.float32)}
    outs = {}
    for layout in ("NCHW", "NHWC"):
        model = qmodels.build(text, {k: v for k, v in weights.items() if k != "hw" or "hw" in text})
        q = fp8ort.quantize(ir.to_proto(model), calibration_data=calib, config=fp8ort.QuantizeConfig(layout=layout))
        onnx.checker.check_model(q, full_check=True)
        if layout == "NHWC":
            ops_used = [n.op_type for n in q.graph.node if n.domain == ""]
            assert ops_used.count("Transpose") == transposes, ops_used  # the input (+ the pooled [N,1,1,C] features)
            # the SE block stays float here (its gated product feeds a Mul, not a conv); the head's pooling takes the
            # last conv's FP8 output where it keeps H and W (FP8GlobalAveragePool)
            fp8_pools = sum(n.op_type == "FP8GlobalAveragePool" for n in q.graph.node)
            assert "GlobalAveragePool" not in ops_used, ops_used
            assert ops_used.count("ReduceMean") + fp8_pools == 2, ops_used
        outs[layout] = ops.run(ops.session(q, lib), {"x": calib["x"][:3]})
    for a, b in zip(outs["NCHW"], outs["NHWC"], strict=True):
        np.testing.assert_array_equal(a, b)


def test_nhwc_pooled_graph_output_keeps_its_producer():
    """A model that ends in GlobalAveragePool (a feature extractor): the pooled graph output stays where it is."""
    rng = np.random.default_rng(0)
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4, 8, 8])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 8, 1, 1])
    w = onnx.numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
    nodes = [
        onnx.helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        onnx.helper.make_node("GlobalAveragePool", ["c"], ["y"]),
    ]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[onnx.helper.make_opsetid("", 17)]
    )
    model.ir_version = 8
    calib = {"x": rng.standard_normal((4, 4, 8, 8)).astype(np.float32)}
    q = fp8ort.quantize(model, calibration_data=calib, config=fp8ort.QuantizeConfig(layout="NHWC"))
    onnx.checker.check_model(q, full_check=True)
    assert [o.name for o in q.graph.output] == ["y"]
    # pooled on the conv's FP8 NHWC output, then [N, 1, 1, C] back to the declared NCHW [N, C, 1, 1]
    assert [n.op_type for n in q.graph.node][-2:] == ["FP8GlobalAveragePool", "Transpose"]


@pytest.mark.parametrize("exporter, opset", [("ts", 13), ("dynamo", 18)])
def test_resnet_stem_max_pool_runs_on_fp8_nhwc(exporter, opset, tmp_path, monkeypatch):
    """torchvision-style ResNet, default config: the stem FP8Conv outputs FP8, the MaxPool is an FP8MaxPool on NHWC
    bytes, no Transpose is left around it, and the output equals the float-MaxPool graph's (q is monotone)."""
    pytest.importorskip("torch", reason="the export needs torch")
    import torch_models as tm

    from fp8ort.numerics import sqnr_db
    from fp8ort.quantization import layout

    lib = library_path()
    path = str(tmp_path / "resnet.onnx")
    tm.export("resnet", exporter, opset, path)
    source = onnx.load(path)
    calib = {"x": np.random.default_rng(1).standard_normal((4, 3, 64, 64)).astype(np.float32)}
    q, report = fp8ort.quantize(source, calibration_data=calib, return_report=True)
    onnx.checker.check_model(q, full_check=True)
    with monkeypatch.context() as m:  # the graph as it was before FP8MaxPool
        m.setattr(layout.Fp8MaxPoolPass, "call", lambda self, model: ir.passes.PassResult(model, False))
        old = fp8ort.quantize(source, calibration_data=calib)
    ops_new = [n.op_type for n in q.graph.node]
    ops_old = [n.op_type for n in old.graph.node]
    assert ops_new.count("FP8MaxPool") == 1 and "MaxPool" not in ops_new
    assert ops_new.count("Transpose") == ops_old.count("Transpose") - 2
    producer = {o: n for n in q.graph.node for o in n.output}
    pool = next(n for n in q.graph.node if n.op_type == "FP8MaxPool")
    stem = producer[pool.input[0]]
    assert stem.op_type == "FP8Conv" and stem.input[0] == producer[stem.input[0]].output[0]
    assert producer[stem.input[0]].op_type == "Transpose"  # the model input's, the only one before the stem
    dtype = next(a.i for a in stem.attribute if a.name == "output_dtype")
    assert dtype == onnx.TensorProto.FLOAT8E4M3FN
    for n in q.graph.node:
        if pool.output[0] in n.input:
            assert n.op_type == "FP8Conv" and n.input[0] == pool.output[0]
    line = next(n for n in report.nodes if n.op_type == "MaxPool")
    assert line.status == "fp8" and "FP8MaxPool" in line.reason
    if lib is None:
        return
    feed = {"x": np.random.default_rng(7).standard_normal((2, 3, 64, 64)).astype(np.float32)}
    import onnxruntime as ort

    ref = ort.InferenceSession(source.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    new_y, old_y = ops.run(ops.session(q, lib), feed)[0], ops.run(ops.session(old, lib), feed)[0]
    assert sqnr_db(ref, new_y) >= sqnr_db(ref, old_y) - 0.1
    np.testing.assert_array_equal(new_y, old_y)  # exact: max commutes with the monotone q


def test_max_pool_not_between_fp8_convs_stays_float():
    """A MaxPool whose output is a graph output keeps its float form, with the reason in the report."""
    model = ir.from_onnx_text(
        """
<ir_version: 10, opset_import: ["" : 17]>
g (float[N,4,12,12] x) => (float[N,8,6,6] p) {
    c = Conv <pads=[1,1,1,1]> (x, w)
    r = Relu (c)
    p = MaxPool <kernel_shape=[2,2], strides=[2,2]> (r)
}
""",
        initializers=[ir.tensor(np.random.default_rng(0).standard_normal((8, 4, 3, 3)).astype(np.float32), name="w")],
    )
    calib = {"x": np.random.default_rng(1).standard_normal((2, 4, 12, 12)).astype(np.float32)}
    q, report = fp8ort.quantize(model, calibration_data=calib, return_report=True)
    assert [n.op_type for n in q.graph].count("MaxPool") == 1
    line = next(n for n in report.nodes if n.op_type == "MaxPool")
    assert line.status == "float" and "graph output" in line.reason
