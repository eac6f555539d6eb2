"""``Fp8AttentionPass``: multi-head attention blocks become one ``com.fp8ort.FP8Attention`` (format fp8ort).

Hand-built graphs check what the pass matches and what it leaves float (with a reason); the Hugging Face encoder
exports (BERT, DistilBERT; TorchScript and dynamo) check the real patterns: every layer fused, the out-projection
reads FP8, the model passes the full checker, and its emulated output equals the unfused quantization's.
Everything runs through the NumPy emulation (``fp8ort.emulate``) or onnxruntime for float models, never the native
library (which does not know FP8Attention yet).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import onnx_ir as ir
import onnx_ir.passes.common
import pytest
from conftest import run_float

import fp8ort.quantization as fq
from fp8ort import emulate
from fp8ort.numerics import sqnr_db
from fp8ort.quantization.attention import ATTENTION_REASON_KEY, Fp8AttentionPass
from fp8ort.quantization.prepare import RemoveIdentityPass

FP8_E4M3FN = onnx.TensorProto.FLOAT8E4M3FN
MIN_SQNR_DB = 40.0  # fused against unfused: only float32 summation order differs before the FP8 rounding
F16_ATTENTION_DB = 1.0  # float16 Q/K/V's SQNR against the float model may trail float32 Q/K/V's by this much


def _emulate(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> np.ndarray:
    """The first output of ``model`` through ``fp8ort.emulate`` (the reference semantics)."""
    return emulate.run_reference(model, feed)[0]


def _nodes(model: onnx.ModelProto, op: str) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == op]


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _check_fused_readers(model: onnx.ModelProto, fp8: bool = True) -> None:
    """Every FP8Attention output is read as A by FP8MatMuls, in FP8 (with their a_scale as y_scale) or float."""
    readers = {}
    for n in model.graph.node:
        for i, name in enumerate(n.input):
            readers.setdefault(name, []).append((n, i))
    for att in _nodes(model, "FP8Attention"):
        uses = readers[att.output[0]]
        assert uses and all(n.op_type == "FP8MatMul" and i == 0 for n, i in uses)
        if fp8:
            assert _attrs(att)["output_dtype"] == FP8_E4M3FN
            assert len(att.input) == 5 and all(att.input[4] == n.input[2] for n, _ in uses)
        else:
            assert _attrs(att)["output_dtype"] == onnx.TensorProto.FLOAT and len(att.input) <= 4


# --------------------------------------------------------------------------------------- hand-built graphs

E, HEADS, SEQ_LEN = 16, 2, 6


def _attention_text(variant: str, heads: int, d: int, dv: int) -> str:
    """Pattern A of the eager BERT export, with a constant scale on the scores (or a variant of it)."""
    scores = "s1 = Mul (s0, c)"
    extra_out, extra = "", ""
    if variant == "div":
        scores = "s1 = Div (s0, c)"
    elif variant == "qk":  # sqrt(scale) on Q and on K, as PyTorch's SDPA exports it
        scores = "s1 = Identity (s0)"
    elif variant == "p_read_twice":
        extra_out, extra = f", float[N,{heads},L,L] pn", "pn = Neg (p)"
    elif variant == "scale_not_constant":
        scores = "t = ReduceMean <keepdims=0> (x)\n    s1 = Mul (s0, t)"
    # head h: columns h*D .. h*D+D-1; "interleaved" takes columns h, h+H, ... instead (valid, but not FP8Attention)
    perms = (
        ([0, 3, 1, 2], [0, 3, 2, 1], [0, 2, 3, 1])
        if variant == "interleaved"
        else ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3])
    )
    qh = "qs = Mul (qh, r)" if variant == "qk" else "qs = Identity (qh)"
    kt = "ks = Mul (kt, r)" if variant == "qk" else "ks = Identity (kt)"
    return f"""
<ir_version: 10, opset_import: ["" : 21]>
attention (float[N,L,{E}] x, float[N,1,1,L] mask) => (float[N,L,{E}] y{extra_out}) {{
    q = MatMul (x, wq)
    k = MatMul (x, wk)
    v = MatMul (x, wv)
    q4 = Reshape (q, qk_shape)
    qh = Transpose <perm={perms[0]}> (q4)
    k4 = Reshape (k, qk_shape)
    kt = Transpose <perm={perms[1]}> (k4)
    v4 = Reshape (v, v_shape)
    vh = Transpose <perm={perms[0]}> (v4)
    {qh}
    {kt}
    s0 = MatMul (qs, ks)
    {scores}
    s2 = Add (s1, mask)
    p = Softmax <axis=-1> (s2)
    o = MatMul (p, vh)
    ot = Transpose <perm={perms[2]}> (o)
    o3 = Reshape (ot, o_shape)
    y = MatMul (o3, wo)
    {extra}
}}
"""


def attention_model(
    variant: str = "mul", heads: int = HEADS, d: int = E // HEADS, dv: int | None = None
) -> onnx.ModelProto:
    dv = d if dv is None else dv
    rng = np.random.default_rng(0)
    e = heads * d
    c = 1.0 / np.sqrt(d)
    weights = {
        "wq": rng.standard_normal((E, e)) * 0.4,
        "wk": rng.standard_normal((E, e)) * 0.4,
        "wv": rng.standard_normal((E, heads * dv)) * 0.4,
        "wo": rng.standard_normal((heads * dv, E)) * 0.4,
        "c": np.array(1.0 / c if variant == "div" else c),
        "r": np.array(np.sqrt(c)),
    }
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    weights.update(
        qk_shape=np.array([0, 0, heads, d], np.int64),
        v_shape=np.array([0, 0, heads, dv], np.int64),
        o_shape=np.array([0, 0, -1], np.int64),
    )
    proto = onnx.parser.parse_model(_attention_text(variant, heads, d, dv))
    for node in proto.graph.node:
        node.name = node.output[0]  # the report's lines: the Softmax is "p", the QK MatMul "s0", ...
    proto.graph.initializer.extend(onnx.numpy_helper.from_array(a, n) for n, a in weights.items())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def attention_feed(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.zeros((n, 1, 1, SEQ_LEN), np.float32)
    mask[1::2, ..., -2:] = -10000.0  # padded sequences
    return {"x": rng.standard_normal((n, SEQ_LEN, E)).astype(np.float32), "mask": mask}


def _prepared(proto: onnx.ModelProto) -> ir.Model:
    """The float graph as the emitter sees it: no Identity nodes, shapes inferred."""
    model = ir.from_proto(proto)
    RemoveIdentityPass()(model)
    return ir.from_proto(onnx.shape_inference.infer_shapes(ir.to_proto(model)))


def _quantize(model, config: fq.QuantizeConfig | None = None):
    return fq.quantize(model, calibration_data=attention_feed(8, 1), config=config, return_report=True)


@pytest.mark.parametrize("variant", ["mul", "div", "qk"])
def test_handbuilt_attention_fuses(variant):
    src = attention_model(variant)
    fused, report = _quantize(src)
    onnx.checker.check_model(fused, full_check=True)
    (att,) = _nodes(fused, "FP8Attention")
    assert not _nodes(fused, "Softmax") and not _nodes(fused, "Transpose") and not _nodes(fused, "Reshape")
    assert not [n for n in fused.graph.node if n.op_type == "MatMul"]  # only the FP8MatMul projections are left
    a = _attrs(att)
    assert a["num_heads"] == HEADS and a["nan_to_zero"] == 0
    assert a["scale"] == pytest.approx(1 / np.sqrt(E // HEADS), rel=1e-6)
    assert att.input[3] == "mask"  # the additive mask as it is
    _check_fused_readers(fused)
    line = report.node("p")
    assert line.op_type == "Softmax" and line.status == "fp8" and "FP8Attention" in line.reason
    for name in ("s0", "o", "q4", "ot"):
        assert report.node(name).status == "fused" and report.node(name).fused_into == line.name
    assert report.fp8_macs == sum(n.macs for n in report.nodes if n.op_type == "MatMul" and n.status == "fp8")

    unfused = fq.quantize(src, calibration_data=attention_feed(8, 1), config=fq.QuantizeConfig(fuse_attention=False))
    assert len(_nodes(unfused, "Softmax")) == 1 and not _nodes(unfused, "FP8Attention")
    feed = attention_feed(4, 7)
    got, want = _emulate(fused, feed), _emulate(unfused, feed)
    assert sqnr_db(want, got) >= MIN_SQNR_DB
    assert sqnr_db(run_float(ir.from_proto(src), feed)[0], got) > 20.0  # and it is still the float model


def test_float_output_without_fp8_activations():
    fused, _ = _quantize(attention_model(), fq.QuantizeConfig(fp8_activations=False))
    assert len(_nodes(fused, "FP8Attention")) == 1
    _check_fused_readers(fused, fp8=False)
    onnx.checker.check_model(fused, full_check=True)


def test_pass_fuses_a_float_graph():
    """The projections need not be FP8MatMuls: the pass on the float graph gives the float model's numbers."""
    src = attention_model("qk")
    model = _prepared(src)
    result = Fp8AttentionPass()(model)
    assert result.modified
    ir.passes.common.RemoveUnusedNodesPass()(model)
    fused = ir.to_proto(model)
    assert [n.op_type for n in fused.graph.node] == ["MatMul", "MatMul", "MatMul", "FP8Attention", "MatMul"]
    onnx.checker.check_model(fused, full_check=True)
    feed = attention_feed(4, 3)
    np.testing.assert_allclose(_emulate(fused, feed), run_float(ir.from_proto(src), feed)[0], rtol=1e-4, atol=1e-5)


NOT_FUSED = {
    # variant, model arguments, expected words of the reason
    "p_read_twice": ({"variant": "p_read_twice"}, "other readers"),
    "dv_mismatch": ({"dv": 4}, "differs from V head size 4"),
    "head_size_over_128": ({"heads": 1, "d": 144}, "larger than 128"),
    "scale_not_constant": ({"variant": "scale_not_constant"}, "non-constant"),
    "interleaved_heads": ({"variant": "interleaved", "heads": 4, "d": 4}, "the query is laid out as [B, D, S, H]"),
}


@pytest.mark.parametrize("case", list(NOT_FUSED))
def test_blocks_that_do_not_fit_stay_float(case):
    kwargs, words = NOT_FUSED[case]
    src = attention_model(**kwargs)
    # the pass alone: the reason on the Softmax, the graph untouched
    model = _prepared(src)
    before = [(n.op_type, n.name) for n in model.graph]
    assert not Fp8AttentionPass()(model).modified
    assert [(n.op_type, n.name) for n in model.graph] == before
    (sm,) = [n for n in model.graph if n.op_type == "Softmax"]
    assert words in sm.meta[ATTENTION_REASON_KEY]
    # through the quantizer: the report's Softmax line says why
    quantized, report = _quantize(src)
    assert not _nodes(quantized, "FP8Attention") and len(_nodes(quantized, "Softmax")) == 1
    line = report.node("p")
    assert line.status == "float" and "attention block left unfused" in line.reason and words in line.reason
    onnx.checker.check_model(quantized, full_check=True)


def test_qdq_and_switched_off_are_not_fused():
    src = attention_model()
    qdq = fq.quantize(src, calibration_data=attention_feed(8, 1), config=fq.QuantizeConfig(format="qdq"))
    assert not _nodes(qdq, "FP8Attention") and len(_nodes(qdq, "Softmax")) == 1
    off, report = _quantize(src, fq.QuantizeConfig(fuse_attention=False))
    assert not _nodes(off, "FP8Attention")
    assert "attention" not in report.node("p").reason
    assert fq.QuantizeConfig.from_json(fq.QuantizeConfig(fuse_attention=False).to_json()).fuse_attention is False


def test_classifier_softmax_gets_no_attention_reason():
    text = """
<ir_version: 10, opset_import: ["" : 21]>
head (float[N,16] x) => (float[N,4] y) {
    l = MatMul (x, w)
    y = Softmax <axis=-1> (l)
}
"""
    proto = onnx.parser.parse_model(text)
    w = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    proto.graph.initializer.append(onnx.numpy_helper.from_array(w, "w"))
    model = ir.from_proto(onnx.shape_inference.infer_shapes(proto))
    assert not Fp8AttentionPass()(model).modified
    assert all(ATTENTION_REASON_KEY not in n.meta for n in model.graph)


# ----------------------------------------------------------------------------------------- encoder exports


EXPORTS = {
    "bert-ts17": ("bert", "ts", 17),
    "bert-dynamo18": ("bert", "dynamo", 18),
    "distilbert-ts17": ("distilbert", "ts", 17),
    "distilbert-dynamo20": ("distilbert", "dynamo", 20),
}
ENCODER_SEQ = 16


def _encoder_feed(n: int, seed: int) -> dict[str, np.ndarray]:
    """As test_exports._feed: token ids, every second sequence padded (its last 3 positions masked)."""
    rng = np.random.default_rng(seed)
    mask = np.ones((n, ENCODER_SEQ), np.int64)
    mask[1::2, -3:] = 0
    return {"input_ids": rng.integers(0, 100, (n, ENCODER_SEQ)).astype(np.int64), "attention_mask": mask}


@pytest.fixture(scope="module")
def tm():
    """torch_models, imported only where torch is installed (the hand-built tests above run without it)."""
    pytest.importorskip("torch", reason="the encoder exports need torch (pip install torch)")
    return pytest.importorskip("torch_models", reason="torch_models needs torch")


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tm):
    pytest.importorskip("transformers", reason="the encoder exports need transformers (pip install transformers)")
    cache: dict[str, str] = {}

    def get(key: str) -> str:
        if key not in cache:
            path = str(tmp_path_factory.mktemp("attention") / f"{key}.onnx")
            tm.export(*EXPORTS[key], path)
            cache[key] = path
        return cache[key]

    return get


@pytest.mark.parametrize("key", list(EXPORTS))
def test_encoder_attention_is_fused(exported, tm, key):
    path = exported(key)
    calib = _encoder_feed(4, seed=1)
    fused, report = fq.quantize(path, calibration_data=calib, return_report=True)
    layers = tm.ENCODER_DIMS["layers"]
    atts = _nodes(fused, "FP8Attention")
    assert len(atts) == layers, report.table()
    assert not _nodes(fused, "Softmax") and not [n for n in fused.graph.node if n.op_type == "MatMul"]
    for att in atts:
        a = _attrs(att)
        assert a["num_heads"] == tm.ENCODER_DIMS["heads"] and a["nan_to_zero"] == 1
        head = tm.ENCODER_DIMS["hidden"] // tm.ENCODER_DIMS["heads"]
        assert a["scale"] == pytest.approx(1 / np.sqrt(head), rel=1e-6)
    _check_fused_readers(fused)  # the out-projection reads FP8
    onnx.checker.check_model(fused, full_check=True)
    lines = [n for n in report.nodes if n.op_type == "Softmax"]
    assert len(lines) == layers and all(n.status == "fp8" for n in lines)
    linear, attention = tm.encoder_macs(ENCODER_SEQ)
    assert report.fp8_macs == linear and report.total_macs == linear + attention

    # the default hands FP8Attention float16 Q, K and V: the packed projections write float16
    producers = {o: n for n in fused.graph.node for o in n.output}
    for att in atts:
        assert _attrs(producers[att.input[0]])["output_dtype"] == onnx.TensorProto.FLOAT16

    unfused = fq.quantize(path, calibration_data=calib, config=fq.QuantizeConfig(fuse_attention=False))
    assert len(_nodes(unfused, "Softmax")) == layers and not _nodes(unfused, "FP8Attention")
    fused32 = fq.quantize(path, calibration_data=calib, config=fq.QuantizeConfig(attention_float16=False))
    feed = _encoder_feed(4, seed=7)
    got, want = _emulate(fused32, feed), _emulate(unfused, feed)
    assert sqnr_db(want, got) >= MIN_SQNR_DB or np.abs(got - want).max() < 1e-5
    # float16 Q, K and V round the projections by 2^-11 relative; the FP8 codes that rounding moves across a boundary
    # (one step each) leave the output ~30-40 dB from the float32 attention's, a different rounding of the same
    # accuracy: against the float model, within F16_ATTENTION_DB of float32 Q, K and V
    ref = run_float(ir.from_proto(onnx.load(path)), feed)[0]
    f16_db, f32_db = sqnr_db(ref, _emulate(fused, feed)), sqnr_db(ref, got)
    print(f"{key}: float16 Q/K/V {f16_db:.2f} dB, float32 {f32_db:.2f} dB against the float model")
    assert f16_db >= f32_db - F16_ATTENTION_DB
