"""FP8 between the weight layers through float-op islands: ``FP8LayerNormalization`` in encoders (an exact rewrite),
``FP8GlobalAveragePool``/``FP8ChannelMul`` for squeeze-excitation blocks and classifier heads (new quantization
points, decided once per plan so that the QDQ emulation quantizes where the fp8ort model does).

Small torch exports (TorchScript; dynamo for one encoder and one CNN), 4 calibration samples, 2 held-out ones; the
fp8ort models run through ``fp8ort.emulate`` (no native library), float and QDQ models through onnxruntime.
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from conftest import run_float

import fp8ort.quantization as fq
from fp8ort import emulate
from fp8ort.numerics import sqnr_db
from fp8ort.quantization import rewrite
from fp8ort.quantization.api import Plan
from fp8ort.quantization.layernorm import LAYERNORM_REASON_KEY, Fp8LayerNormPass
from fp8ort.quantization.rules import Pooling

torch = pytest.importorskip("torch", reason="the export tests export models with torch (pip install torch)")
tm = pytest.importorskip("torch_models", reason="torch_models needs torch")

SEQ = 16
# Output SQNR floors of tests/quantization/test_exports.py (random weights, 4 calibration samples).
MIN_SQNR_DB = {"resnet": 27.0, "mobilenetv3": 35.0, "efficientnet": 35.0}
# Quantizing X before the squeeze-excitation is a second FP8 rounding of the block's activation (the projection conv
# already quantized the product): measured -3.9 dB on EfficientNet, +1.4 dB on MobileNetV3, +0.2 dB on ResNet's head.
MAX_POOLING_LOSS_DB = 4.5
AGREE_DB = 100.0  # fp8ort (emulated) against its QDQ emulation: the same roundings, float32 summation order only


def _feed(name: str, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name in tm.CNNS:
        return {"x": rng.standard_normal((n, 3, 64, 64)).astype(np.float32)}
    mask = np.ones((n, SEQ), np.int64)
    mask[1::2, -3:] = 0
    return {"input_ids": rng.integers(0, 100, (n, SEQ)).astype(np.int64), "attention_mask": mask}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    cache: dict[tuple[str, str], onnx.ModelProto] = {}

    def get(name: str, exporter: str = "ts") -> onnx.ModelProto:
        if (name, exporter) not in cache:
            if name in tm.ENCODERS:
                pytest.importorskip("transformers", reason="the encoder exports need transformers")
            path = str(tmp_path_factory.mktemp("islands") / f"{name}-{exporter}.onnx")
            tm.export(name, exporter, 17 if exporter == "ts" else 18, path)
            cache[name, exporter] = onnx.load(path)
        return cache[name, exporter]

    return get


def _quantize(source: onnx.ModelProto, name: str, **config) -> tuple[onnx.ModelProto, fq.QuantizeReport]:
    return fq.quantize(
        source, calibration_data=_feed(name, 4, seed=1), config=fq.QuantizeConfig(**config), return_report=True
    )


def _counts(model: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in model.graph.node)


def _readers(model: onnx.ModelProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    out = collections.defaultdict(list)
    for n in model.graph.node:
        for i, name in enumerate(n.input):
            out[name].append((n, i))
    return out


class _NoPass:
    def __call__(self, model: ir.Model) -> None:
        pass


# ------------------------------------------------------------------------------------------- LayerNorm


@pytest.mark.parametrize(("name", "exporter"), [("bert", "ts"), ("distilbert", "ts"), ("bert", "dynamo")])
def test_layernorm_writes_the_fp8_copy(export, monkeypatch, name, exporter):
    source = export(name, exporter)
    fp8, report = _quantize(source, name)
    onnx.checker.check_model(fp8, full_check=True)
    counts = _counts(fp8)
    layers = tm.ENCODER_DIMS["layers"]
    # every LayerNormalization but the last (the graph output) feeds FP8 projections: 2 per layer + the embeddings'
    assert counts["FP8LayerNormalization"] == 2 * layers
    assert counts["LayerNormalization"] == 1 and counts["FP8Quantize"] == 0
    readers = _readers(fp8)
    for ln in (n for n in fp8.graph.node if n.op_type == "FP8LayerNormalization"):
        assert [i for i in ln.input] and len(ln.output) == 2
        fp8_readers = readers[ln.output[1]]
        assert fp8_readers and all(n.op_type == "FP8MatMul" and i == 0 for n, i in fp8_readers)
        assert all(n.input[2] == ln.input[3] for n, _ in fp8_readers)  # the readers' scale is y_scale
        float_readers = [(n.op_type, i) for n, i in readers[ln.output[0]] if n.op_type != "Shape"]
        assert set(float_readers) == {("FP8MatMul", 5)}  # the float Y: the next residual sum
    last = next(n for n in report.nodes if n.op_type == "LayerNormalization" and n.status == "float")
    assert "no FP8 op reads its output" in last.reason
    assert sum(n.op_type == "LayerNormalization" and n.status == "fp8" for n in report.nodes) == 2 * layers

    # an exact rewrite: the same outputs as without it
    monkeypatch.setattr(rewrite, "Fp8LayerNormPass", _NoPass)
    unfused, _ = _quantize(source, name)
    # each LayerNorm output has one FP8 reader (the packed Q/K/V projection or the FFN's up-projection), which
    # quantizes its float input itself
    assert _counts(unfused)["FP8LayerNormalization"] == 0 and _counts(unfused)["FP8Quantize"] == 0
    feed = _feed(name, 2, seed=7)
    got = emulate.run_reference(fp8, feed)[0]
    want = emulate.run_reference(unfused, feed)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)  # float32 LayerNorm summation order only
    ref = run_float(ir.from_proto(source), feed)[0]
    assert sqnr_db(ref, got) > 20.0  # test_exports' floor for the encoders


def test_layernorm_left_alone_with_a_reason():
    """stash_type other than float32, or a Scale of another type: the node stays with its reason."""
    text = """
    <ir_version: 10, opset_import: ["" : 17, "com.fp8ort" : 1]>
    g (float[4, 8] x) => (float[4, 8] y, float[4, 8] z) {
        ln = LayerNormalization <stash_type = 10> (x, s, b)
        y = com.fp8ort.FP8MatMul (ln, w, sc, ws)
        z = Identity (ln)
    }
    """
    model = onnx.parser.parse_model(text)
    f8 = onnx.TensorProto.FLOAT8E4M3FN
    model.graph.initializer.extend(
        [
            onnx.numpy_helper.from_array(np.ones(8, np.float32), "s"),
            onnx.numpy_helper.from_array(np.zeros(8, np.float32), "b"),
            onnx.helper.make_tensor("w", f8, [8, 8], np.zeros(64, np.float32)),
            onnx.numpy_helper.from_array(np.float32(0.1), "sc"),
            onnx.numpy_helper.from_array(np.ones(8, np.float32), "ws"),
        ]
    )
    ir_model = ir.from_proto(model)
    Fp8LayerNormPass()(ir_model)
    ln = next(n for n in ir_model.graph if n.op_type.startswith(("LayerNorm", "FP8LayerNorm")))
    assert ln.op_type == "LayerNormalization" and "stash_type" in ln.meta[LAYERNORM_REASON_KEY]
    ln.attributes.pop("stash_type")
    Fp8LayerNormPass()(ir_model)
    ln = next(n for n in ir_model.graph if n.op_type.startswith(("LayerNorm", "FP8LayerNorm")))
    assert ln.op_type == "FP8LayerNormalization"
    assert ln.outputs[0].name == "ln" and [u.node.op_type for u in ln.outputs[0].uses()] == ["Identity"]


# --------------------------------------------------------------------------------- pooling and SE gates

# (model, exporter): (FP8GlobalAveragePool, FP8ChannelMul) in its fp8ort model
POOLED = {
    ("efficientnet", "ts"): (4, 3),
    ("mobilenetv3", "ts"): (3, 2),
    ("resnet", "ts"): (1, 0),
    ("efficientnet", "dynamo"): (4, 3),
}


@pytest.mark.parametrize(("name", "exporter"), list(POOLED))
def test_pooling_and_gates_on_fp8_data(export, monkeypatch, name, exporter):
    source = export(name, exporter)
    fp8, report = _quantize(source, name)  # NHWC (the fp8ort default)
    onnx.checker.check_model(fp8, full_check=True)
    counts = _counts(fp8)
    pools, gates = POOLED[name, exporter]
    assert (counts["FP8GlobalAveragePool"], counts["FP8ChannelMul"]) == (pools, gates)
    for op in ("GlobalAveragePool", "ReduceMean", "Mul", "MaxPool"):
        assert counts[op] == 0, op  # no float mean or activation product left
    assert counts["Transpose"] == 2  # the input's to_nhwc and the head's to_nchw before Flatten: none inside
    readers = _readers(fp8)
    for n in fp8.graph.node:
        if n.op_type == "FP8ChannelMul":
            assert dict((a.name, a.s) for a in n.attribute if a.name == "layout") == {"layout": b"NHWC"}
            uses = readers[n.output[0]]
            assert uses and all(r.op_type == "FP8Conv" and i == 0 and r.input[2] == n.input[3] for r, i in uses)
    status = {n.name: n.status for n in report.nodes if n.op_type in ("GlobalAveragePool", "ReduceMean", "Mul")}
    assert list(status.values()).count("fp8") == pools + gates

    feed = _feed(name, 2, seed=7)
    ref = run_float(ir.from_proto(source), feed)[0]
    got = emulate.run_reference(fp8, feed)[0]
    qdq, _ = _quantize(source, name, format="qdq", report_sqnr=False)
    emulated = run_float(ir.from_proto(qdq), feed)[0]
    assert sqnr_db(emulated, got) > AGREE_DB  # the QDQ emulation quantizes X before the same nodes
    # one Q/DQ per pooled output (here each has one mean, some also a gate)
    assert sum(n.op_type == "QuantizeLinear" and ".pooled." in n.name for n in qdq.graph.node) == pools

    nchw, _ = _quantize(source, name, layout="NCHW", report_sqnr=False)
    onnx.checker.check_model(nchw, full_check=True)
    assert (_counts(nchw)["FP8GlobalAveragePool"], _counts(nchw)["FP8ChannelMul"]) == (pools, gates)
    np.testing.assert_allclose(emulate.run_reference(nchw, feed)[0], got, rtol=0, atol=1e-4)

    monkeypatch.setattr(rewrite, "pooled_fp8_outputs", lambda *a, **k: Pooling({}, {}))
    before, _ = _quantize(source, name, report_sqnr=False)
    old = sqnr_db(ref, emulate.run_reference(before, feed)[0])
    new = sqnr_db(ref, got)
    print(f"{name}-{exporter}: output SQNR {new:.2f} dB, {old:.2f} dB without FP8 pooling")
    assert new > MIN_SQNR_DB[name] and new > old - MAX_POOLING_LOSS_DB


def test_switch_model_blends_the_pooled_quantization(export):
    """The accuracy search's switch model: all switches on is the QDQ emulation, all off the float model."""
    name = "mobilenetv3"
    source = export(name)
    plan = Plan(ir.from_proto(source), fq.QuantizeConfig(), False)
    plan.calibrate(_feed(name, 4, seed=1))
    model = plan.build("qdq", switches=True)
    switches = [v.name for v in model.graph.inputs if v.name.endswith(".fp8_switch")]
    feed = _feed(name, 2, seed=7)
    on = run_float(model, {**feed, **{s: np.array(1, np.float32) for s in switches}})[0]
    off = run_float(model, {**feed, **{s: np.array(0, np.float32) for s in switches}})[0]
    np.testing.assert_allclose(off, run_float(ir.from_proto(source), feed)[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(on, run_float(plan.build("qdq"), feed)[0], rtol=1e-5, atol=1e-5)
    blends = [n for n in model.graph if n.op_type == "Sub" and ".pooled." in n.name]
    assert len(blends) == 3  # one per pooled output (the SE blocks' and the head's)
