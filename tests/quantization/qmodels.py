"""Small float models built from ONNX text for the quantizer tests (random weights, fixed seeds)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import onnx_ir as ir

RESNETISH = """
<ir_version: 10, opset_import: ["" : 21]>
resnetish (float[N,3,16,16] x) => (float[N,10] logits) {
    c1 = Conv <pads=[1,1,1,1], strides=[1,1]> (x, w1, b1)
    bn1 = BatchNormalization (c1, g1, be1, m1, v1)
    r1 = Relu (bn1)
    p1 = MaxPool <kernel_shape=[2,2], strides=[2,2]> (r1)
    c2 = Conv <pads=[1,1,1,1]> (p1, w2)
    r2 = Relu (c2)
    c3 = Conv <pads=[1,1,1,1]> (r2, w3, b3)
    a3 = Add (c3, p1)
    r3 = Relu (a3)
    dw = Conv <pads=[1,1,1,1], group=8> (r3, wdw, bdw)
    r4 = Relu (dw)
    gp = GlobalAveragePool (r4)
    fl = Flatten (gp)
    logits = Gemm <transB=1, alpha=0.5> (fl, wfc, bfc)
}
"""

ENCODER = """
<ir_version: 10, opset_import: ["" : 21]>
encoder (float[N,6,16] x) => (float[N,6,16] y, float[N,6,6] s) {
    h = MatMul (x, w1)
    hb = Add (h, b1)
    hr = Relu (hb)
    o = MatMul (hr, w2)
    ob = Add (o, b2)
    y0 = Add (ob, x)
    y0t = Transpose <perm=[0,2,1]> (y0)
    s = MatMul (y0, y0t)
    y = Identity (y0)
}
"""


def _init(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 0.3) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def build(text: str, weights: dict[str, np.ndarray]) -> ir.Model:
    """Parse ONNX text and attach the weights as initializers."""
    proto = onnx.parser.parse_model(text)
    proto.graph.initializer.extend(onnx.numpy_helper.from_array(a, n) for n, a in weights.items())
    onnx.checker.check_model(proto, full_check=True)
    return ir.from_proto(proto)


def resnetish(seed: int = 0) -> ir.Model:
    rng = np.random.default_rng(seed)
    w = {
        "w1": _init(rng, (8, 3, 3, 3)),
        "b1": _init(rng, (8,)),
        "g1": (1 + 0.1 * rng.standard_normal(8)).astype(np.float32),
        "be1": _init(rng, (8,)),
        "m1": _init(rng, (8,)),
        "v1": (0.5 + rng.random(8)).astype(np.float32),
        "w2": _init(rng, (8, 8, 3, 3), 0.2),
        "w3": _init(rng, (8, 8, 3, 3), 0.2),
        "b3": _init(rng, (8,)),
        "wdw": _init(rng, (8, 1, 3, 3)),
        "bdw": _init(rng, (8,)),
        "wfc": _init(rng, (10, 8)),
        "bfc": _init(rng, (10,)),
    }
    w["w2"][3] = 0.0  # an all-zero output channel must get a valid scale
    return build(RESNETISH, w)


def encoder(seed: int = 0) -> ir.Model:
    rng = np.random.default_rng(seed)
    return build(
        ENCODER,
        {"w1": _init(rng, (16, 32)), "b1": _init(rng, (32,)), "w2": _init(rng, (32, 16)), "b2": _init(rng, (16,))},
    )


def calib(model: ir.Model, n: int = 16, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    v = model.graph.inputs[0]
    shape = [n] + [int(d) for d in v.shape[1:]]
    return {v.name: rng.standard_normal(shape).astype(np.float32)}


BOTTLENECK = """
<ir_version: 10, opset_import: ["" : 21]>
bottleneck (float[N,4,8,8] x) => (float[N,8,8,8] y) {
    a = Conv <pads=[1,1,1,1]> (x, wa)
    ra = Relu (a)
    b = Conv (ra, wb)
    d = Conv (x, wd)
    s = Add (b, d)
    r = Relu (s)
    y = Conv <pads=[1,1,1,1]> (r, wc)
}
"""


def bottleneck(seed: int = 0) -> ir.Model:
    """A ResNet downsample block: the residual Add joins two convolutions, the second one later in graph order."""
    rng = np.random.default_rng(seed)
    return build(
        BOTTLENECK,
        {
            "wa": _init(rng, (8, 4, 3, 3)),
            "wb": _init(rng, (8, 8, 1, 1)),
            "wd": _init(rng, (8, 4, 1, 1)),
            "wc": _init(rng, (8, 8, 3, 3), 0.2),
        },
    )


def padded_encoder_feed(seed: int, padded_row: int, pad: int, batch: int = 3, seq: int = 16) -> dict:
    """``input_ids`` (random, below 100) and an ``attention_mask`` with the last ``pad`` positions of one row masked."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[padded_row, -pad:] = 0
    return {"input_ids": rng.integers(0, 100, (batch, seq)).astype(np.int64), "attention_mask": mask}


def quantized_with_and_without(src: str, pass_class: type, feed: dict, monkeypatch) -> tuple:
    """``fp8ort.quantize(src)`` as it is, then with ``pass_class`` doing nothing (calibrated on ``feed``)."""
    import fp8ort

    with_pass = fp8ort.quantize(src, calibration_data=feed)
    monkeypatch.setattr(pass_class, "call", lambda self, m: ir.passes.PassResult(m, False))
    return with_pass, fp8ort.quantize(src, calibration_data=feed)
