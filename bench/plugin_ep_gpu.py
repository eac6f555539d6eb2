"""Models as users export them, quantized by fp8ort, through the plugin EP on the stock onnxruntime wheel.

For each model (torchvision ResNet-50 exported with ``torch.onnx.export(dynamo=False)``, timm EfficientNet-B0,
Hugging Face BERT-base at sequence 128; random weights: no hub downloads on the GPU machine) and batch size:
* fp8ort: ``fp8ort.quantize`` with the default config, run by ``Fp8OrtExecutionProvider`` on the GPU
  (IOBinding with device OrtValues, the vendor-id route), graph capture off and on; the node placement is
  checked (every node on the EP) and the output compared with the float model (SQNR, dB);
* PyTorch FP16 (channels_last for the CNNs) replayed as a CUDA graph, in the same run.

    python bench/plugin_ep_gpu.py --out bench/results/plugin_ep_h200.json [--models resnet50 efficientnet_b0 bert]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fp8ort  # noqa: E402

VENDOR_IDS = {"cuda": 0x10DE, "hip": 0x1002}


def export_model(name: str, path: Path, batch_dim: str = "N") -> object:
    """Exports a float model as a user would (TorchScript exporter, opset 17); returns the torch module."""
    import torch

    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision

        m = torchvision.models.resnet50().eval()
        x = torch.randn(1, 3, 224, 224)
        args, names, axes = (x,), ["input"], {"input": {0: batch_dim}, "logits": {0: batch_dim}}
        outs = ["logits"]
    elif name == "efficientnet_b0":
        import timm

        m = timm.create_model("efficientnet_b0", pretrained=False).eval()
        x = torch.randn(1, 3, 224, 224)
        args, names, axes = (x,), ["input"], {"input": {0: batch_dim}, "logits": {0: batch_dim}}
        outs = ["logits"]
    elif name == "bert":
        from transformers import BertConfig, BertModel

        class Encoder(torch.nn.Module):  # inputs by keyword: forward()'s parameter order differs between versions
            def __init__(self) -> None:
                super().__init__()
                self.bert = BertModel(BertConfig())

            def forward(self, input_ids, attention_mask):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        m = Encoder().eval()
        ids = torch.randint(0, 30522, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.int64)
        args, names = (ids, mask), ["input_ids", "attention_mask"]
        axes = {"input_ids": {0: batch_dim}, "attention_mask": {0: batch_dim}, "last_hidden_state": {0: batch_dim}}
        outs = ["last_hidden_state"]
    else:
        raise ValueError(f"unknown model {name!r}")
    torch.onnx.export(
        m, args, str(path), input_names=names, output_names=outs, dynamic_axes=axes, opset_version=17, dynamo=False
    )
    return m


def make_inputs(name: str, batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "bert":
        return {
            "input_ids": rng.integers(0, 30522, (batch, 128), dtype=np.int64),
            "attention_mask": np.ones((batch, 128), dtype=np.int64),
        }
    return {"input": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def ep_session(path: str, graph: bool) -> ort.InferenceSession:
    """The ORT-native route: register the library, add the EP for its GPU device (placement is reported apart)."""
    fp8ort.register()
    so = ort.SessionOptions()
    so.add_provider_for_devices([fp8ort.select_device("gpu")], {"enable_graph_capture": "1" if graph else "0"})
    return ort.InferenceSession(path, so)


def time_ep(
    sess: ort.InferenceSession, feed: dict[str, np.ndarray], out_shape: list[int], runs: int, vendor: int
) -> tuple[float, np.ndarray]:
    """Median seconds per run with inputs and outputs bound as device OrtValues."""
    binding = sess.io_binding()
    keep = []
    for inp in sess.get_inputs():
        v = ort.OrtValue.ortvalue_from_numpy(feed[inp.name], "gpu", 0, vendor)
        keep.append(v)
        binding.bind_ortvalue_input(inp.name, v)
    out = sess.get_outputs()[0]
    y = ort.OrtValue.ortvalue_from_shape_and_type(out_shape, np.float32, "gpu", 0, vendor)
    binding.bind_ortvalue_output(out.name, y)
    for _ in range(10):  # warm-up; graph capture happens here
        sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), y.numpy()


def time_torch(module: object, name: str, feed: dict[str, np.ndarray], runs: int) -> float:
    """PyTorch FP16 (channels_last for CNNs), replayed as a CUDA graph: median seconds per replay."""
    import torch

    m = module.half().cuda()
    if name == "bert":
        args = [torch.from_numpy(feed["input_ids"]).cuda(), torch.from_numpy(feed["attention_mask"]).cuda()]
        kwargs = {}
    else:
        m = m.to(memory_format=torch.channels_last)
        args = [torch.from_numpy(feed["input"]).half().cuda().to(memory_format=torch.channels_last)]
        kwargs = {}
    with torch.inference_mode():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(*args, **kwargs)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            m(*args, **kwargs)
        for _ in range(5):
            g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            g.replay()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    m.float().cpu()
    return statistics.median(times)


def placement(path: str) -> dict[str, int]:
    """Nodes per execution provider, from fp8ort's session report."""
    sess = fp8ort.InferenceSession(path, device="gpu")
    counts: dict[str, int] = {}
    for ep in sess.placement.values():
        counts[ep] = counts.get(ep, 0) + 1
    return counts


def gpu_name() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--models", nargs="+", default=["resnet50", "efficientnet_b0", "bert"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--calibration", type=int, default=8, help="calibration samples (random data)")
    args = ap.parse_args()
    vendor = VENDOR_IDS.get(fp8ort.backend(), 0x10DE)
    work = Path(tempfile.mkdtemp(prefix="fp8ort_ep_"))
    results: dict = {}
    for name in args.models:
        entry: dict = {}
        results[name] = entry
        fp32 = work / f"{name}.onnx"
        fp8 = work / f"{name}.fp8.onnx"
        try:
            module = export_model(name, fp32)
            calib = make_inputs(name, args.calibration, seed=1)
            t0 = time.perf_counter()
            _, report = fp8ort.quantize(str(fp32), str(fp8), calibration_data=calib, return_report=True)
            entry["quantize_s"] = time.perf_counter() - t0
            entry["fp8_mac_share"] = report.fp8_mac_share
            entry["placement"] = placement(str(fp8))
            variants = [("fp8ort", fp8, False), ("fp8ort_graph", fp8, True)]
            if name != "bert":  # the same model quantized channels-last: FP8 tensors stay NHWC between the convs
                fp8n = work / f"{name}.fp8.nhwc.onnx"
                fp8ort.quantize(
                    str(fp32), str(fp8n), calibration_data=calib, config=fp8ort.QuantizeConfig(layout="NHWC")
                )
                entry["placement_nhwc"] = placement(str(fp8n))
                variants.append(("fp8ort_nhwc", fp8n, False))
        except Exception as exc:  # one model failing must not hide the others
            entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            print(f"{name}: {entry['error']}", flush=True)
            continue
        print(
            f"{name}: quantized in {entry['quantize_s']:.1f} s, FP8 MACs {entry['fp8_mac_share']:.1%}, "
            f"placement {entry['placement']}",
            flush=True,
        )
        float_sess = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"])
        for batch in [1, 32] if name == "bert" else [1, 32, 256]:
            feed = make_inputs(name, batch, seed=2)
            row: dict = {}
            entry[str(batch)] = row
            ref = float_sess.run(None, feed)[0]
            for key, path, graph in variants:
                try:
                    sec, y = time_ep(ep_session(str(path), graph), feed, list(ref.shape), args.runs, vendor)
                    row[key] = {"ms": sec * 1e3, "per_s": batch / sec, "sqnr_db_vs_fp32": fp8ort.sqnr_db(ref, y)}
                except Exception as exc:
                    row[key] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            try:
                sec = time_torch(module, name, feed, args.runs)
                row["torch_fp16_graph"] = {"ms": sec * 1e3, "per_s": batch / sec}
            except Exception as exc:
                row["torch_fp16_graph"] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            print(
                f"{name} batch {batch}: "
                + ", ".join(
                    f"{k} {v['per_s']:.0f}/s" if "per_s" in v else f"{k} {v['error'][:80]}" for k, v in row.items()
                ),
                flush=True,
            )
    record = {
        "benchmark": "exported models through fp8ort's plugin EP on the stock onnxruntime wheel, against PyTorch FP16",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "gpu": gpu_name(),
        "onnxruntime": ort.__version__,
        "fp8ort": fp8ort.__version__,
        "date": datetime.date.today().isoformat(),
        "weights": "random (torchvision/timm/transformers constructors, seed 0); calibration on random inputs",
        "timing": f"median of {args.runs} runs after 10 warm-ups; IOBinding with device OrtValues",
        "results": results,
    }
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
