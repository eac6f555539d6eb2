"""``Fp8AttentionPass`` on window attention with a packed projection (torchvision's Swin Transformer).

``shifted_window_attention`` projects the windows ``[B*nW, N, C]`` once, ``qkv [B*nW, N, 3*C]``, splits the heads
with ``reshape(B*nW, N, 3, H, D).permute(2, 0, 3, 1, 4)`` and picks ``qkv[0], qkv[1], qkv[2]`` (Gathers of the leading
axis), scales Q, adds a constant relative-position bias ``[1, H, N, N]`` to the scores and merges the heads with
``transpose(1, 2).reshape(B*nW, N, C)``: FP8Attention's packed form reading ``qkv``, the bias as ``attn_bias``. The
shifted windows also add a per-window mask to the scores reshaped to ``[B, nW, H, N, N]``, which the pass leaves
float with that reason. The hand-built graph checks the rule (and packings it must refuse); the exports check a small
torchvision ``SwinTransformer`` with a dynamic and a static batch through the plugin EP's CPU device: the pass alone
on the float graph gives the float model's numbers, and the quantized model the unfused quantization's.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import onnx_ir as ir
import onnxruntime as ort
import pytest
from conftest import run_float
from test_attention_fusion import MIN_SQNR_DB, _attrs
from test_attention_mha import MIN_FLOAT_SQNR_DB, _export, _float_fused, _ops

import fp8ort
import fp8ort.quantization as fq
from fp8ort.numerics import sqnr_db
from fp8ort.quantization.attention import ATTENTION_REASON_KEY

C, HEADS, N = 16, 2, 9  # channels, heads, window positions (a 3x3 window)
D = C // HEADS
SHIFTED_REASON = "a mask is added to the scores reshaped to"

# ------------------------------------------------------------------------------------------ hand-built graph


def _window_text(variant: str) -> str:
    """One window-attention block on ``x [W, N, C]`` (W windows, dynamic) as the TorchScript export of torchvision's
    ``shifted_window_attention`` writes it once the quantizer has folded its constants (no shift). ``variant``:
    ``"swin"``; ``"swapped"`` (Q is ``qkv[1]``, K ``qkv[0]``: not the packed form's order); ``"interleaved"``
    (``reshape(W, N, H, 3, D).permute(3, 0, 2, 1, 4)``: each head's Q, K, V side by side, not the thirds);
    ``"wrong_bias"`` (a relative-position bias ``[1, H + 1, N, N]`` that does not broadcast to the scores)."""
    q_index, k_index = ("one", "zero") if variant == "swapped" else ("zero", "one")
    split, perm = ("heads_split", "[3, 0, 2, 1, 4]") if variant == "interleaved" else ("split", "[2, 0, 3, 1, 4]")
    return f"""
<ir_version: 10, opset_import: ["" : 17]>
window (float[W,{N},{C}] x) => (float[W,{N},{C}] y) {{
    shape = Shape (x)
    w = Gather <axis=0> (shape, zero)
    w1 = Unsqueeze (w, axes)
    split = Concat <axis=0> (w1, n1, three, h1, d1)
    heads_split = Concat <axis=0> (w1, n1, h1, three, d1)
    merge = Concat <axis=0> (w1, n1, c1)
    p0 = MatMul (x, wqkv)
    qkv = Add (bqkv, p0)
    qkv5 = Reshape (qkv, {split})
    qkvt = Transpose <perm={perm}> (qkv5)
    q = Gather <axis=0> (qkvt, {q_index})
    k = Gather <axis=0> (qkvt, {k_index})
    v = Gather <axis=0> (qkvt, two)
    qs = Mul (q, c)
    kt = Transpose <perm=[0, 1, 3, 2]> (k)
    s0 = MatMul (qs, kt)
    s1 = Add (s0, rel)
    p = Softmax <axis=-1> (s1)
    o = MatMul (p, v)
    ot = Transpose <perm=[0, 2, 1, 3]> (o)
    o3 = Reshape (ot, merge)
    y0 = MatMul (o3, wo)
    y = Add (bo, y0)
}}
"""


def window_model(variant: str = "swin") -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    rel_heads = HEADS + 1 if variant == "wrong_bias" else HEADS
    arrays = {
        "wqkv": (rng.standard_normal((C, 3 * C)) * 0.4).astype(np.float32),
        "bqkv": (rng.standard_normal(3 * C) * 0.1).astype(np.float32),
        "wo": (rng.standard_normal((C, C)) * 0.4).astype(np.float32),
        "bo": (rng.standard_normal(C) * 0.1).astype(np.float32),
        "rel": rng.standard_normal((1, rel_heads, N, N)).astype(np.float32),
        "c": np.array(D**-0.5, np.float32),
        "axes": np.array([0], np.int64),
    }
    arrays.update({k: np.array(v, np.int64) for k, v in {"zero": 0, "one": 1, "two": 2}.items()})
    arrays.update({k: np.array([v], np.int64) for k, v in {"n1": N, "three": 3, "h1": HEADS, "d1": D, "c1": C}.items()})
    proto = onnx.parser.parse_model(_window_text(variant))
    for node in proto.graph.node:
        node.name = node.output[0]
    proto.graph.initializer.extend(onnx.numpy_helper.from_array(a, n) for n, a in arrays.items())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def window_feed(windows: int, seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((windows, N, C)).astype(np.float32)}


def _check_packed(model: onnx.ModelProto, heads: list[int]) -> None:
    """Each FP8Attention reads the packed form (K and V absent) and a constant ``[1, H, N, N]`` bias; ``heads``: the
    head count of each, in graph order."""
    consts = {t.name: t for t in model.graph.initializer}
    atts = [n for n in model.graph.node if n.op_type == "FP8Attention"]
    assert [_attrs(a)["num_heads"] for a in atts] == heads
    for att, h in zip(atts, heads):
        assert len(att.input) >= 4 and att.input[1] == att.input[2] == ""
        bias = consts[att.input[3]]
        assert list(bias.dims)[:2] == [1, h] and bias.dims[2] == bias.dims[3]


def test_window_attention_fuses_packed_exactly(library):
    src = window_model()
    fused, _ = _float_fused(src)
    assert fused is not None
    onnx.checker.check_model(fused, full_check=True)
    ops = _ops(fused)
    assert ops["FP8Attention"] == 1 and not ops["Softmax"] and not ops["Gather"]
    _check_packed(fused, [HEADS])
    (att,) = [n for n in fused.graph.node if n.op_type == "FP8Attention"]
    assert _attrs(att)["scale"] == pytest.approx(D**-0.5, rel=1e-6)
    producers = {o: n for n in fused.graph.node for o in n.output}
    assert producers[att.input[0]].op_type == "Add"  # the projection itself, [W, N, 3*C]
    for windows in (4, 1, 7):
        feed = window_feed(windows, seed=windows)
        want = run_float(ir.from_proto(src), feed)[0]
        got = fp8ort.InferenceSession(fused, device="cpu", strict=True).run(None, feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    calib = window_feed(8, seed=1)
    quantized, report = fq.quantize(src, calibration_data=calib, return_report=True)
    assert _ops(quantized)["FP8Attention"] == 1 and not _ops(quantized)["Softmax"]
    assert "packed" in report.node("p").reason
    unfused = fq.quantize(src, calibration_data=calib, config=fq.QuantizeConfig(fuse_attention=False))
    feed = window_feed(5, seed=2)
    got, want = (fp8ort.InferenceSession(m, device="cpu").run(None, feed)[0] for m in (quantized, unfused))
    assert sqnr_db(want, got) >= MIN_SQNR_DB


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        ("swapped", "not the thirds 0, 1 and 2 of one packed projection (Gathers pick [1, 0, 2])"),
        ("interleaved", "does not line up with the heads"),
        ("wrong_bias", "does not broadcast to the scores"),
    ],
)
def test_window_attention_that_is_not_the_packed_form_stays_float(variant, reason):
    fused, model = _float_fused(window_model(variant))
    assert fused is None
    (sm,) = [n for n in model.graph if n.op_type == "Softmax"]
    assert reason in sm.meta[ATTENTION_REASON_KEY]


# --------------------------------------------------------------------------------------------- torch exports


@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic-batch", "static-batch"])
def test_torchvision_swin_window_attention_fuses(torch, dynamic, tmp_path, library):
    """A small torchvision ``SwinTransformer``: 32x32 images, 4x4 windows. Stage 1 (8x8, 4 windows of 16 positions,
    2 heads) has a plain and a shifted block; stage 2 (4x4, one window, 4 heads) shifts nothing (the window covers
    the map), so both its blocks are plain. The three plain blocks fuse in the packed form with the relative-position
    bias as ``attn_bias``; the shifted one stays float with its reason."""
    torchvision = pytest.importorskip("torchvision", reason="the Swin export needs torchvision")
    torch.manual_seed(0)
    swin = torchvision.models.SwinTransformer(
        patch_size=[4, 4],
        embed_dim=16,
        depths=[2, 2],
        num_heads=[2, 4],
        window_size=[4, 4],
        stochastic_depth_prob=0.0,
        num_classes=10,
    )
    path = str(tmp_path / "swin.onnx")
    rng = np.random.default_rng(0)
    example = {"x": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)}
    _export(torch, swin, example, path, {"x": {0: "batch"}} if dynamic else None)
    feeds = [{"x": rng.standard_normal((n, 3, 32, 32)).astype(np.float32)} for n in ((3, 1) if dynamic else (2,))]
    calib = {"x": rng.standard_normal((4 if dynamic else 2, 3, 32, 32)).astype(np.float32)}

    src = onnx.load(path)
    fused, model = _float_fused(src)
    assert fused is not None and _ops(fused)["FP8Attention"] == 3 and _ops(fused)["Softmax"] == 1
    _check_packed(fused, [2, 4, 4])
    (shifted,) = [n for n in model.graph if n.op_type == "Softmax"]
    assert shifted.meta[ATTENTION_REASON_KEY].startswith(SHIFTED_REASON)
    assert "features.1.1" in shifted.name  # stage 1's second block: the shifted one
    float_session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for feed in feeds:
        got = fp8ort.InferenceSession(fused, device="cpu", strict=True).run(None, feed)[0]
        np.testing.assert_allclose(got, float_session.run(None, feed)[0], rtol=1e-4, atol=1e-5)

    quantized, report = fq.quantize(src, calibration_data=calib, return_report=True)
    assert _ops(quantized)["FP8Attention"] == 3 and _ops(quantized)["Softmax"] == 1, report.table()
    (line,) = [n for n in report.nodes if n.op_type == "Softmax" and n.status == "float"]
    assert SHIFTED_REASON in line.reason
    unfused = fq.quantize(src, calibration_data=calib, config=fq.QuantizeConfig(fuse_attention=False))
    assert _ops(unfused)["Softmax"] == 4
    for feed in feeds:
        got, want = (fp8ort.InferenceSession(m, device="cpu").run(None, feed)[0] for m in (quantized, unfused))
        assert sqnr_db(want, got) >= MIN_SQNR_DB
        assert sqnr_db(float_session.run(None, feed)[0], got) > MIN_FLOAT_SQNR_DB
