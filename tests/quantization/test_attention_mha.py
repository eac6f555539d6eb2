"""``Fp8AttentionPass`` on ``nn.MultiheadAttention``'s sequence-first form (torchvision's ViT among others).

``F.multi_head_attention_forward`` works on ``[S, B, E]`` tensors (``batch_first=True`` transposes its input first):
the heads are split by ``view(S, B * heads, D)``, whose target shape the TorchScript exporter computes as
``Shape(x)[1] * heads`` with a dynamic batch, a transpose and ``view(B, heads, S, D)``, and merged by
``permute(2, 0, 1, 3).view(S * B, E)`` for the out-projection. FP8Attention reads ``[B, S, ...]``, so the fused
block transposes Q, K, V and its output. The hand-built graph checks the rule that proves such a computed target
dimension (and two it must refuse); the exports check torchvision's VisionTransformer with a dynamic and a static
batch and ``nn.MultiheadAttention`` used directly, through the plugin EP's CPU device: the pass alone on the float
graph gives the float model's numbers, and the quantized model the unfused quantization's.
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnx.parser
import onnx_ir as ir
import onnx_ir.passes.common
import onnxruntime as ort
import pytest
from conftest import run_float
from test_attention_fusion import MIN_SQNR_DB

import fp8ort
import fp8ort.quantization as fq
from fp8ort.numerics import sqnr_db
from fp8ort.quantization.attention import ATTENTION_REASON_KEY, Fp8AttentionPass
from fp8ort.quantization.prepare import prepare

E, HEADS = 16, 2
MIN_FLOAT_SQNR_DB = 15.0  # FP8 against the float model with random weights: still the model (the sweep's ~20 dB)

# ------------------------------------------------------------------------------------------ hand-built graph


def _mha_text(variant: str) -> tuple[str, int]:
    """Self-attention on ``x [L, N, E]`` as the TorchScript export of ``F.multi_head_attention_forward`` writes it
    once the quantizer has folded its constants, with the length L and the batch N dynamic. ``variant``:
    ``"mha"``, or ``"length_times_heads"`` (the split multiplies L, not N, by the heads: right only where L == N),
    ``"not_the_heads"`` (``view(L, N * 4, D / 2)``: a valid reshape whose factor is not the head count). The merge
    computes ``N * L`` for the axis holding ``L, N``, as the exporter does. Also returns the head size of the first
    view."""
    d = E // HEADS
    splits = {"length_times_heads": ("l, h_", d), "not_the_heads": ("n, four", d // 2)}
    product, split_d = splits.get(variant, ("n, h_", d))
    heads = []
    for t in "qkv":
        heads.append(f"""
    {t} = MatMul (x, w{t})
    {t}3 = Reshape ({t}, split)
    {t}t = Transpose <perm=[1, 0, 2]> ({t}3)
    {t}h = Reshape ({t}t, bhld)""")
    text = f"""
<ir_version: 10, opset_import: ["" : 17]>
mha (float[L,N,{E}] x) => (float[L,N,{E}] y) {{
    shape = Shape (x)
    l = Gather <axis=0> (shape, zero)
    n = Gather <axis=0> (shape, one)
    nh = Mul ({product})
    l1 = Unsqueeze (l, axes)
    n1 = Unsqueeze (n, axes)
    nh1 = Unsqueeze (nh, axes)
    split = Concat <axis=0> (l1, nh1, d_split)
    bhld = Concat <axis=0> (n1, h1, l1, d1)
    {"".join(heads)}
    kht = Transpose <perm=[0, 1, 3, 2]> (kh)
    s0 = MatMul (qh, kht)
    s1 = Mul (s0, c)
    p = Softmax <axis=-1> (s1)
    o = MatMul (p, vh)
    ot = Transpose <perm=[2, 0, 1, 3]> (o)
    ln = Mul (n, l)
    ln1 = Unsqueeze (ln, axes)
    merge = Concat <axis=0> (ln1, e1)
    o2 = Reshape (ot, merge)
    y2 = MatMul (o2, wo)
    out_shape = Concat <axis=0> (l1, n1, e1)
    y = Reshape (y2, out_shape)
}}
"""
    return text, split_d


def mha_model(variant: str = "mha") -> onnx.ModelProto:
    text, split_d = _mha_text(variant)
    rng = np.random.default_rng(0)
    d = E // HEADS
    arrays = {f"w{t}": (rng.standard_normal((E, E)) * 0.4).astype(np.float32) for t in "qkvo"}
    arrays.update(c=np.array(1 / np.sqrt(d), np.float32), axes=np.array([0], np.int64))
    ints = {"zero": 0, "one": 1, "h_": HEADS, "four": 4}
    arrays.update({k: np.array(v, np.int64) for k, v in ints.items()})
    arrays.update({k: np.array([v], np.int64) for k, v in {"h1": HEADS, "d1": d, "d_split": split_d, "e1": E}.items()})
    proto = onnx.parser.parse_model(text)
    for node in proto.graph.node:
        node.name = node.output[0]
    proto.graph.initializer.extend(onnx.numpy_helper.from_array(a, n) for n, a in arrays.items())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def mha_feed(length: int, batch: int, seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((length, batch, E)).astype(np.float32)}


def _float_fused(proto: onnx.ModelProto) -> tuple[onnx.ModelProto | None, ir.Model]:
    """The pass alone on the prepared float graph (what the quantizer hands it, without the FP8 projections): the
    fused model (None where nothing fused) and the graph with the reasons on its Softmaxes."""
    model = prepare(ir.from_proto(proto)).model
    modified = Fp8AttentionPass()(model).modified
    ir.passes.common.RemoveUnusedNodesPass()(model)
    return (ir.to_proto(model) if modified else None), model


def _ops(proto: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in proto.graph.node)


def test_sequence_first_mha_fuses_exactly(library):
    src = mha_model()
    fused, _ = _float_fused(src)
    assert fused is not None
    onnx.checker.check_model(fused, full_check=True)
    ops = _ops(fused)
    assert ops["FP8Attention"] == 1 and not ops["Softmax"]
    (att,) = [n for n in fused.graph.node if n.op_type == "FP8Attention"]
    producers = {o: n for n in fused.graph.node for o in n.output}
    assert all(producers[i].op_type == "Transpose" for i in att.input[:3])  # [L, N, E] -> [N, L, E]
    readers = [n for n in fused.graph.node if att.output[0] in n.input]
    assert [n.op_type for n in readers] == ["Transpose"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in att.attribute}
    assert attrs["num_heads"] == HEADS and attrs["scale"] == pytest.approx(1 / np.sqrt(E // HEADS), rel=1e-6)
    for length, batch in ((5, 3), (1, 4), (7, 1)):  # both dimensions dynamic
        feed = mha_feed(length, batch, seed=length)
        want = run_float(ir.from_proto(src), feed)[0]
        got = fp8ort.InferenceSession(fused, device="cpu", strict=True).run(None, feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    calib = mha_feed(6, 4, seed=1)
    quantized, report = fq.quantize(src, calibration_data=calib, return_report=True)
    assert _ops(quantized)["FP8Attention"] == 1 and not _ops(quantized)["Softmax"]
    line = report.node("p")
    assert line.status == "fp8" and "sequence-first" in line.reason
    unfused = fq.quantize(src, calibration_data=calib, config=fq.QuantizeConfig(fuse_attention=False))
    feed = mha_feed(6, 3, seed=2)
    got, want = (fp8ort.InferenceSession(m, device="cpu").run(None, feed)[0] for m in (quantized, unfused))
    assert sqnr_db(want, got) >= MIN_SQNR_DB


@pytest.mark.parametrize("variant", ["length_times_heads", "not_the_heads"])
def test_computed_split_that_is_not_batch_times_heads_stays_float(variant):
    _, model = _float_fused(mha_model(variant))
    (sm,) = [n for n in model.graph if n.op_type == "Softmax"]
    assert "a product of dimensions does not line up with the heads" in sm.meta[ATTENTION_REASON_KEY]
    assert not [n for n in model.graph if n.op_type == "FP8Attention"]


# --------------------------------------------------------------------------------------------- torch exports


def _export(torch, model, inputs: dict, path: str, dynamic: dict | None) -> None:
    """TorchScript export at opset 17, as bench/export_sweep.py does it (no ``no_grad``: under it, the eval-mode
    module takes the fused ``_native_multi_head_attention`` path, which the exporter cannot write); ``dynamic``: the
    dynamic axes of each input, the output's batch axis that of the first."""
    kwargs = {}
    if dynamic:
        kwargs["dynamic_axes"] = {**dynamic, "y": next(iter(dynamic.values()))}
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    torch.onnx.export(
        model.eval(), args, path, dynamo=False, opset_version=17, input_names=list(inputs), output_names=["y"], **kwargs
    )


def _check_fused(
    path: str, layers: int, feeds: list[dict[str, np.ndarray]], calib: dict[str, np.ndarray]
) -> onnx.ModelProto:
    """Every attention block fused (sequence-first: ``F.multi_head_attention_forward`` works on ``[S, B, E]``); the
    pass alone keeps the float model's numbers, and the quantized model the unfused quantization's, through the
    plugin EP's CPU device. Returns the quantized model."""
    src = onnx.load(path)
    fused, _ = _float_fused(src)
    assert fused is not None and _ops(fused)["FP8Attention"] == layers and not _ops(fused)["Softmax"]
    float_session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for feed in feeds:
        got = fp8ort.InferenceSession(fused, device="cpu", strict=True).run(None, feed)[0]
        np.testing.assert_allclose(got, float_session.run(None, feed)[0], rtol=1e-4, atol=1e-5)

    quantized, report = fq.quantize(src, calibration_data=calib, return_report=True)
    assert _ops(quantized)["FP8Attention"] == layers, report.table()
    assert not _ops(quantized)["Softmax"] and "left unfused" not in report.table()
    assert all("sequence-first" in n.reason for n in report.nodes if n.op_type == "Softmax")
    unfused = fq.quantize(src, calibration_data=calib, config=fq.QuantizeConfig(fuse_attention=False))
    assert _ops(unfused)["Softmax"] == layers
    for feed in feeds:
        got, want = (fp8ort.InferenceSession(m, device="cpu").run(None, feed)[0] for m in (quantized, unfused))
        assert sqnr_db(want, got) >= MIN_SQNR_DB
        assert sqnr_db(float_session.run(None, feed)[0], got) > MIN_FLOAT_SQNR_DB
    return quantized


@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic-batch", "static-batch"])
def test_torchvision_vit_attention_fuses(torch, dynamic, tmp_path, library):
    """torchvision's VisionTransformer: ``nn.MultiheadAttention(batch_first=True)`` in every encoder block."""
    torchvision = pytest.importorskip("torchvision", reason="the ViT export needs torchvision")
    torch.manual_seed(0)
    layers = 2
    vit = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=layers, num_heads=2, hidden_dim=64, mlp_dim=128
    )
    torch.nn.init.normal_(vit.heads.head.weight, std=0.02)  # torchvision zero-initializes the head
    path = str(tmp_path / "vit.onnx")
    rng = np.random.default_rng(0)
    example = {"x": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)}
    _export(torch, vit, example, path, {"x": {0: "batch"}} if dynamic else None)
    batches = (3, 1) if dynamic else (2,)
    feeds = [{"x": rng.standard_normal((n, 3, 32, 32)).astype(np.float32)} for n in batches]
    _check_fused(path, layers, feeds, {"x": rng.standard_normal((4 if dynamic else 2, 3, 32, 32)).astype(np.float32)})


@pytest.mark.parametrize("form", ["sequence-first", "batch-first", "padding-mask"])
def test_multihead_attention_module_fuses(torch, form, tmp_path, library):
    """``nn.MultiheadAttention`` used directly, between two Linear layers, batch dynamic; ``padding-mask``:
    sequence-first with a ``key_padding_mask`` (an additive -inf mask ``[B, H, 1, T]`` for FP8Attention). The
    TorchScript export writes the key length as a constant (the example's), so the sequence stays static: marked
    dynamic, the export fails at run time for other lengths, and the pass refuses it (the constant is not provably
    the key's length)."""
    nn = torch.nn
    batch_first = form == "batch-first"

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp, self.out = nn.Linear(E, 32), nn.Linear(32, 8)
            self.mha = nn.MultiheadAttention(32, 4, batch_first=batch_first)

        def forward(self, x, pad=None):
            h = self.inp(x)
            return self.out(self.mha(h, h, h, key_padding_mask=pad, need_weights=False)[0])

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    seq = 6

    def feed(n: int) -> dict[str, np.ndarray]:
        x = {"x": rng.standard_normal((n, seq, E) if batch_first else (seq, n, E)).astype(np.float32)}
        if form == "padding-mask":
            x["pad"] = np.zeros((n, seq), bool)
            x["pad"][1::2, -2:] = True  # every second sequence padded
        return x

    dynamic = {"x": {0 if batch_first else 1: "batch"}}
    if form == "padding-mask":
        dynamic["pad"] = {0: "batch"}
    path = str(tmp_path / "mha.onnx")
    _export(torch, Block(), feed(2), path, dynamic)
    quantized = _check_fused(path, 1, [feed(3), feed(1)], feed(4))
    (att,) = [n for n in quantized.graph.node if n.op_type == "FP8Attention"]
    assert len(att.input) == (4 if form == "padding-mask" else 3)
