"""Models as users export them (torch, both exporters), quantized by fp8ort, through the plugin EP with every node
on the EP (strict): torchvision/timm-style CNNs and Hugging Face encoders, whose attention-mask subgraphs (Range,
comparisons, And, GatherElements, GatherND, Where, int64 arithmetic) must run on the EP too.

On the CPU device the outputs match the custom-op route (bit-identical for the CNNs; the encoders' float
LayerNormalization/Softmax/MatMul are ORT's CPU kernels there); on a GPU device they are compared with the
CPU device (same FP8 rounding up to accumulation order) and with the float model.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import fp8ort
from fp8ort import ops
from fp8ort.numerics import sqnr_db

torch = pytest.importorskip("torch", reason="the export tests export models with torch (pip install torch)")
from ..quantization import torch_models as tm  # noqa: E402

# id: (model, exporter, opset)
EXPORTS = {
    "resnet-ts17": ("resnet", "ts", 17),
    "mobilenetv3-dynamo18": ("mobilenetv3", "dynamo", 18),
    "efficientnet-ts17": ("efficientnet", "ts", 17),
    "bert-ts17": ("bert", "ts", 17),
    "bert-dynamo18": ("bert", "dynamo", 18),
    "distilbert-dynamo20": ("distilbert", "dynamo", 20),
}
# output SQNR floors against the float model (random-weight models calibrated on 4 samples; test_exports.py's)
MIN_SQNR_DB = {"resnet": 27.0, "mobilenetv3": 35.0, "efficientnet": 35.0, "bert": 21.0, "distilbert": 20.0}
GPU_VS_CPU_DB = 30.0  # GPU device against the exact CPU device: accumulation order and FP8 ties only


def _feed(name: str, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name in tm.CNNS:
        return {"x": rng.standard_normal((n, 3, 64, 64)).astype(np.float32)}
    mask = np.ones((n, 16), np.int64)
    mask[1::2, -3:] = 0  # padded sequences
    return {"input_ids": rng.integers(0, 100, (n, 16)).astype(np.int64), "attention_mask": mask}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    cache: dict[str, tuple[onnx.ModelProto, onnx.ModelProto]] = {}

    def get(key: str) -> tuple[onnx.ModelProto, onnx.ModelProto]:
        if key not in cache:
            name, exporter, opset = EXPORTS[key]
            if name in tm.ENCODERS:
                pytest.importorskip("transformers", reason="the encoder exports need transformers")
            path = str(tmp_path_factory.mktemp("exports") / f"{key}.onnx")
            tm.export(name, exporter, opset, path)
            source = onnx.load(path)
            config = fp8ort.QuantizeConfig(report_sqnr=False)
            cache[key] = (source, fp8ort.quantize(source, calibration_data=_feed(name, 4, 1), config=config))
        return cache[key]

    return get


def _has_gpu() -> bool:
    try:
        fp8ort.register()
        return any(d.device.type == ort.OrtHardwareDeviceType.GPU for d in fp8ort.ep_devices())
    except Exception:
        return False


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize("key", list(EXPORTS))
def test_export_runs_entirely_on_the_ep(exported, key: str, device: str) -> None:
    if device == "gpu" and not _has_gpu():
        pytest.skip("fp8ort finds no GPU device")
    name = EXPORTS[key][0]
    source, fp8 = exported(key)
    feed = _feed(name, 3, 2)
    sess = fp8ort.InferenceSession(fp8, device=device, strict=True)
    assert set(sess.placement.values()) == {"Fp8OrtExecutionProvider"}
    got = sess.run(None, feed)[0]
    assert np.isfinite(got).all()
    want = ort.InferenceSession(source.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    assert sqnr_db(want, got) >= MIN_SQNR_DB[name], f"{key} on {device}: {sqnr_db(want, got):.1f} dB vs float"
    if device == "cpu":  # the custom-op route: the same com.fp8ort kernels; its float ops are ORT's CPU EP's
        route = ops.run(fp8, feed)[0]
        if name in tm.CNNS:
            np.testing.assert_array_equal(got, route)
        else:  # LayerNormalization/Softmax/float MatMul round differently from ORT's float kernels
            np.testing.assert_allclose(got, route, rtol=1e-4, atol=1e-5)
    else:
        cpu = fp8ort.InferenceSession(fp8, device="cpu", strict=True).run(None, feed)[0]
        assert sqnr_db(cpu, got) >= GPU_VS_CPU_DB, f"{key}: GPU vs CPU device {sqnr_db(cpu, got):.1f} dB"
