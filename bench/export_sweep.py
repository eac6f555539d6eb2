"""Coverage of popular exports: each model as users export it (torchvision, timm, Hugging Face; random weights,
TorchScript exporter, opset 17, dynamic batch), quantized by fp8ort with the default config, run through the plugin
EP's CPU device (``--device gpu``: its GPU device). Per model: FP8 share of the MACs, weight layers left in float and
why, ops the EP left to ORT's CPU EP, output SQNR against the float model on ORT (random weights: a check that
nothing is broken, not an accuracy figure). Each model runs in its own process (an exporter or quantizer failure is
a row, not the end of the sweep).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MODELS = (
    "tv:resnet18 tv:mobilenet_v2 tv:mobilenet_v3_large tv:efficientnet_b0 tv:convnext_tiny tv:regnet_y_400mf "
    "tv:densenet121 tv:shufflenet_v2_x1_0 tv:squeezenet1_1 tv:vit_b_16 tv:swin_t timm:resnet50 timm:efficientnet_b0 "
    "timm:mobilenetv3_large_100 timm:vit_small_patch16_224 timm:convnext_nano timm:deit_tiny_patch16_224 "
    "timm:regnety_008 timm:tf_efficientnet_lite0 hf:BertModel hf:DistilBertModel hf:RobertaModel hf:ViTModel "
    "hf:GPT2Model"
).split()
IMAGE, SEQ, LAYERS = 96, 32, 2  # CNN input side (transformers take their own), text length, transformer depth


class LastHidden:
    """A Hugging Face model called with keyword inputs, returning last_hidden_state (built lazily: torch import)."""

    @staticmethod
    def wrap(model, keys):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = model

            def forward(self, *args):
                return self.m(**dict(zip(keys, args))).last_hidden_state

        return Wrapped()


def exporter_versions() -> dict[str, str]:
    import importlib.metadata as md

    def version(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:  # a sweep of torchvision models alone needs no timm
            return "not installed"

    return {p: version(p) for p in ("torch", "torchvision", "timm", "transformers", "onnx")}


def build(key: str):
    """(module, feed names and arrays of batch 2, notes)."""
    import torch

    torch.manual_seed(0)
    source, name = key.split(":", 1)
    rng = np.random.default_rng(0)
    notes: list[str] = []

    def image(side: int) -> dict:
        return {"x": rng.standard_normal((2, 3, side, side)).astype(np.float32)}

    if source == "tv":
        import torchvision

        m = getattr(torchvision.models, name)(weights=None)
        side = 224 if name in ("vit_b_16", "swin_t") else IMAGE
        if name == "vit_b_16":
            m.encoder.layers = m.encoder.layers[:LAYERS]
            torch.nn.init.normal_(m.heads.head.weight, std=0.02)  # torchvision zero-initializes the head
            notes.append(f"{LAYERS} encoder layers; head re-initialized N(0, 0.02)")
        return m, image(side), notes
    if source == "timm":
        import timm

        m = timm.create_model(name, pretrained=False)
        side = m.pretrained_cfg.get("input_size", (3, 224, 224))[-1] if "vit" in name or "deit" in name else IMAGE
        return m, image(side), notes
    import transformers as tr

    if name == "ViTModel":
        m = tr.ViTModel(tr.ViTConfig(num_hidden_layers=LAYERS))
        return LastHidden.wrap(m, ["pixel_values"]), image(224), [f"{LAYERS} layers"]
    cfg = {
        "BertModel": lambda: tr.BertConfig(num_hidden_layers=LAYERS),
        "DistilBertModel": lambda: tr.DistilBertConfig(n_layers=LAYERS),
        "RobertaModel": lambda: tr.RobertaConfig(num_hidden_layers=LAYERS),
        "GPT2Model": lambda: tr.GPT2Config(n_layer=LAYERS, use_cache=False),
    }[name]()
    m = getattr(tr, name)(cfg)
    mask = np.ones((2, SEQ), np.int64)
    mask[1, -5:] = 0  # a padded sequence
    feed = {"input_ids": rng.integers(0, 1000, (2, SEQ)).astype(np.int64), "attention_mask": mask}
    return LastHidden.wrap(m, list(feed)), feed, [f"{LAYERS} layers"]


def one(key: str, work: Path, device: str) -> dict:
    """Export, quantize and run one model (in this process)."""
    import onnx
    import onnxruntime as ort
    import torch

    import fp8ort
    from fp8ort.numerics import sqnr_db

    row: dict = {"model": key}
    model, feed, row["notes"] = build(key)
    model.eval()
    path = str(work / "model.onnx")
    text = "input_ids" in feed
    axes = {n: ({0: "batch", 1: "seq"} if text else {0: "batch"}) for n in feed}
    t = time.perf_counter()
    try:
        torch.onnx.export(
            model, tuple(torch.from_numpy(v) for v in feed.values()), path, dynamo=False, opset_version=17,
            input_names=list(feed), output_names=["y"], dynamic_axes=axes,
        )  # fmt: skip
    except Exception as exc:  # the exporter's failure, not fp8ort's: a row of its own
        row["export_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        return row
    row["export_s"] = round(time.perf_counter() - t, 1)
    src = onnx.load(path)
    row["float_nodes"] = len(src.graph.node)
    calib = {k: np.concatenate([v, v[::-1]]) for k, v in feed.items()}  # 4 samples
    t = time.perf_counter()
    fp8, report = fp8ort.quantize(src, calibration_data=calib, return_report=True)
    row["quantize_s"] = round(time.perf_counter() - t, 1)
    row["fp8_mac_share"] = round(report.fp8_macs / max(report.total_macs, 1), 4)
    weight_ops = ("Conv", "Gemm", "MatMul")
    kept = [n for n in report.nodes if n.op_type in weight_ops and n.status == "float"]
    row["float_weight_layers"] = dict(collections.Counter(n.reason for n in kept))
    row["attention_unfused"] = dict(
        collections.Counter(n.reason for n in report.nodes if n.op_type == "Softmax" and n.status == "float")
    )
    row["fp8_ops"] = dict(collections.Counter(n.op_type for n in fp8.graph.node if n.domain == "com.fp8ort"))
    held = {k: np.flip(v, axis=0).copy() for k, v in feed.items()}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, held)[0]
    sess = fp8ort.InferenceSession(fp8, device=device)
    got = sess.run(None, held)[0]
    op_of = {n.name: n.op_type for n in fp8.graph.node}
    off = [op_of.get(name, name) for name, ep in sess.placement.items() if ep != fp8ort.get_ep_name()]
    row["nodes"], row["off_ep"] = len(sess.placement), dict(collections.Counter(off))
    row["sqnr_db"] = round(float(sqnr_db(want, got)), 2)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=MODELS)
    ap.add_argument("--out", help="JSON record (a Markdown table beside it)")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="the plugin EP's device to run on")
    ap.add_argument("--jobs", type=int, default=1, help="models run at once, each in its own process")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # the worker: one model, its row as JSON on stdout
    args = ap.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory() as work:
            print("ROW " + json.dumps(one(args.one, Path(work), args.device)))
        return 0

    def worker(key: str) -> dict:
        cmd = [sys.executable, __file__, "--one", key, "--device", args.device]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        line = next((x for x in done.stdout.splitlines() if x.startswith("ROW ")), None)
        row = json.loads(line[4:]) if line else {"model": key, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        print(json.dumps(row), flush=True)
        return row

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(worker, args.models))  # in the order asked, whatever order they finish in
    table = [
        "| model | FP8 MAC share | weight layers left float | ops off the EP | SQNR dB |",
        "| --- | ---: | --- | --- | ---: |",
    ]
    for r in rows:
        if "fp8_mac_share" not in r:
            table.append(f"| {r['model']} | — | {r.get('export_error') or r.get('error')} | | |")
            continue
        kept = "; ".join(f"{n}x {why}" for why, n in r["float_weight_layers"].items()) or "none"
        off = ", ".join(f"{op} ({n})" for op, n in r["off_ep"].items()) or "none"
        table.append(f"| {r['model']} | {100 * r['fp8_mac_share']:.1f}% | {kept} | {off} | {r['sqnr_db']} |")
    print("\n".join(table))
    if args.out:
        import onnxruntime

        import fp8ort

        record = dict(
            benchmark=f"export coverage: default quantize, plugin EP {args.device.upper()} device, random weights",
            command=" ".join(["python", *sys.argv]),
            date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
            versions={"fp8ort": fp8ort.__version__, "onnxruntime": onnxruntime.__version__, **exporter_versions()},
            results=rows,
        )
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
        Path(args.out).with_suffix(".md").write_text("\n".join(table) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
