"""Models as users export them, quantized by fp8ort, through the plugin EP, against ORT's and PyTorch's FP16.

For each model (torchvision ResNet-50, timm EfficientNet-B0, Hugging Face BERT-base at sequence 128; random weights;
exported by ``pytorch_side.export_model``) and batch size, in one run (``--systems`` picks among them):
* fp8ort: ``fp8ort.quantize`` with the default config, run by ``Fp8OrtExecutionProvider`` on the GPU of the stock
  onnxruntime wheel (IOBinding with device OrtValues, the vendor-id route), graph capture off and on, and the NHWC
  variant for the CNNs; node placement and the output's SQNR against the float model are recorded;
* ort_cuda: ORT's CUDA EP in FP16 (prefer_nhwc + CUDA graph, and plain; for BERT also after ORT's transformer
  optimizer), from ``ort_cuda_fp16.py`` run as a subprocess with ``--ort-gpu-site`` (onnxruntime-gpu) on PYTHONPATH;
* fp8ort_cuda_ep: the same FP8 model through fp8ort's other route, the custom-op library on ORT's CUDA EP (in that
  worker, with and without CUDA graph), so both routes are measured on one model in one run;
* torch: PyTorch FP16 (channels_last for the CNNs, SDPA for BERT) replayed as a CUDA graph;
* torch_compile (``--torch-compile``): the same through ``torch.compile(mode="max-autotune-no-cudagraphs")``,
  minutes of compiling per model and batch size.

    python3 bench/plugin_ep_gpu.py --out bench/results/h200.json --ort-gpu-site /tmp/ortsite --plot
        [--models resnet50 efficientnet_b0 bert] [--batches 1 32 256] [--torch-compile] [--update]

``--skip-pass qkv.PackQkvPass`` (or ``BENCH_SKIP_PASS``) quantizes without that quantizer pass, for an A/B of it;
``--config '{"power_of_two_scales": false}'`` (or ``BENCH_CONFIG``) changes QuantizeConfig fields the same way.
``--update`` lays this run's rows over the existing ``--out`` file (per model, batch and system), so the models can
be measured in separate calls; ``--plot`` then writes ``<out>.png`` and ``<out>.md`` (bench/plot.py).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
from harness import (
    BATCH_DIM,
    MODELS,
    WARMUPS,
    default_batches,
    error_entry,
    make_inputs,
    median_seconds,
    merge_row,
    run_worker,
    timing_row,
    update_record,
    worker_rows,
    worker_summary,
)
from plot import LABELS, write_all
from plot import systems as systems_of
from pytorch_side import export_model, time_torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fp8ort  # noqa: E402

VENDOR_IDS = {"cuda": 0x10DE, "hip": 0x1002}
SYSTEMS = ("fp8ort", "ort_cuda", "fp8ort_cuda_ep", "torch", "torch_compile")
MODELS_NOTE = (
    "exports, not fp8ort's own graphs: torchvision ResNet-50, timm EfficientNet-B0 and Hugging Face BERT-base "
    "(seq 128), random weights (seed 0), torch.onnx.export(dynamo=False) opset 17; calibration on random inputs"
)


def ep_session(path: str, graph: bool, batch: int) -> ort.InferenceSession:
    """The ORT-native route: register the library, add the EP for its GPU device (placement is reported apart).
    With graph capture the batch dimension is fixed (a free-dimension override, as for ORT's CUDA graph rows), so
    ORT folds the shape subgraphs at session creation and no copy to the host is left inside the run."""
    fp8ort.register()
    so = ort.SessionOptions()
    if graph:
        so.add_free_dimension_override_by_name(BATCH_DIM, batch)
    so.add_provider_for_devices([fp8ort.select_device("gpu")], {"enable_graph_capture": "1" if graph else "0"})
    return ort.InferenceSession(path, so)


def bind_device_io(
    sess: ort.InferenceSession, feed: dict[str, np.ndarray], out_shape: list[int], vendor: int
) -> tuple[ort.IOBinding, ort.OrtValue, list]:
    """An IOBinding with every input copied to a device OrtValue and the first output preallocated on the device
    (the vendor-id route); also returns the output and the inputs, which must outlive the binding."""
    binding = sess.io_binding()
    keep = []
    for inp in sess.get_inputs():
        v = ort.OrtValue.ortvalue_from_numpy(feed[inp.name], "gpu", 0, vendor)
        keep.append(v)
        binding.bind_ortvalue_input(inp.name, v)
    y = ort.OrtValue.ortvalue_from_shape_and_type(out_shape, np.float32, "gpu", 0, vendor)
    binding.bind_ortvalue_output(sess.get_outputs()[0].name, y)
    return binding, y, keep


def time_ep(
    sess: ort.InferenceSession, feed: dict[str, np.ndarray], out_shape: list[int], runs: int, vendor: int
) -> tuple[float, np.ndarray]:
    """Median seconds per run with inputs and outputs bound as device OrtValues (graph capture in the warm-ups)."""
    binding, y, _keep = bind_device_io(sess, feed, out_shape, vendor)
    sec = median_seconds(lambda: sess.run_with_iobinding(binding), binding.synchronize_outputs, runs)
    return sec, y.numpy()


def placement(path: str) -> dict[str, int]:
    """Nodes per execution provider, from fp8ort's session report."""
    sess = fp8ort.InferenceSession(path, device="gpu")
    counts: dict[str, int] = {}
    for ep in sess.placement.values():
        counts[ep] = counts.get(ep, 0) + 1
    return counts


def quantize_variants(
    name: str, fp32: Path, work: Path, entry: dict, calibration: int, config: fp8ort.QuantizeConfig
) -> list[tuple[str, Path, bool]]:
    """Quantizes the export (and, for the CNNs, its NHWC twin); returns (row key, model, graph capture) triples."""
    calib = make_inputs(name, calibration, seed=1)
    fp8 = work / f"{name}.fp8.onnx"
    t0 = time.perf_counter()
    _, report = fp8ort.quantize(str(fp32), str(fp8), calibration_data=calib, config=config, return_report=True)
    entry["quantize_s"] = time.perf_counter() - t0
    entry["fp8_mac_share"] = report.fp8_mac_share
    entry["placement"] = placement(str(fp8))
    variants = [("fp8ort", fp8, False), ("fp8ort_graph", fp8, True)]
    if name != "bert":  # the default is channels-last (layout "auto"); the NCHW layout for comparison
        fp8n = work / f"{name}.fp8.nchw.onnx"
        fp8ort.quantize(str(fp32), str(fp8n), calibration_data=calib, config=config.replace(layout="NCHW"))
        entry["placement_nchw"] = placement(str(fp8n))
        variants.append(("fp8ort_nchw", fp8n, False))
    print(
        f"{name}: quantized in {entry['quantize_s']:.1f} s, FP8 MACs {entry['fp8_mac_share']:.1%}, "
        f"placement {entry['placement']}",
        flush=True,
    )
    return variants


def fp8ort_rows(variants: list, feed: dict, ref: np.ndarray, batch: int, runs: int, vendor: int) -> dict:
    row: dict = {}
    for key, path, graph in variants:
        try:
            sec, y = time_ep(ep_session(str(path), graph, batch), feed, list(ref.shape), runs, vendor)
            row[key] = timing_row(batch, sec, sqnr_db_vs_fp32=fp8ort.sqnr_db(ref, y))
        except Exception as exc:  # one variant failing must not hide the others
            row[key] = error_entry(exc)
    return row


def torch_rows(module: object, name: str, feed: dict, batch: int, runs: int, systems: list[str]) -> dict:
    """PyTorch FP16 + CUDA graph, eager and (if asked) through torch.compile."""
    row: dict = {}
    for key, system, compile in (("torch_fp16_graph", "torch", False), ("torch_compile_graph", "torch_compile", True)):
        if system in systems:
            try:
                row[key] = timing_row(batch, time_torch(module, name, feed, runs, compile=compile))
            except Exception as exc:
                row[key] = error_entry(exc)
    return row


def ort_cuda_rows(
    site: str, name: str, fp32: Path, batches: list[int], runs: int, work: Path, entry: dict, fp8: Path | None
) -> dict:
    """Runs the ORT CUDA EP worker on the export (and fp8ort's model through the CUDA-EP custom-op route, if given);
    its rows by batch (errors in place of a failed worker's rows)."""
    t0 = time.perf_counter()
    record = run_worker(site, name, fp32, batches, runs, work / f"{name}_ort_cuda", fp8=fp8)
    entry["ort_cuda"] = {**worker_summary(record), "worker_s": time.perf_counter() - t0}
    print(f"{name}: ORT CUDA EP worker done in {entry['ort_cuda']['worker_s']:.0f} s", flush=True)
    return worker_rows(record, name, batches)


def bench_model(name: str, args: argparse.Namespace, work: Path, vendor: int) -> dict:
    """Every asked system at every batch size of one model: the model's entry of the record."""
    entry: dict = {}
    fp32 = work / f"{name}.onnx"
    try:
        module = export_model(name, fp32)
    except Exception as exc:  # one model failing must not hide the others
        entry.update(error_entry(exc))
        print(f"{name}: {entry['error']}", flush=True)
        return entry
    variants: list = []
    quantize_error: dict | None = None
    if "fp8ort" in args.systems:
        try:
            variants = quantize_variants(name, fp32, work, entry, args.calibration, args.config)
        except Exception as exc:  # the other systems still run on the export
            quantize_error = {"error": f"quantize: {error_entry(exc)['error']}"}
            print(f"{name}: {quantize_error['error']}", flush=True)
    batches = args.batches or default_batches(name)
    worker: dict = {}
    if {"ort_cuda", "fp8ort_cuda_ep"} & set(args.systems):
        fp8 = variants[0][1] if variants and "fp8ort_cuda_ep" in args.systems else None
        worker = ort_cuda_rows(args.ort_gpu_site, name, fp32, batches, args.runs, work, entry, fp8)
    float_sess = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"])
    for batch in batches:
        feed = make_inputs(name, batch, seed=2)
        ref = float_sess.run(None, feed)[0]
        row = (
            {"fp8ort": dict(quantize_error)}
            if quantize_error
            else fp8ort_rows(variants, feed, ref, batch, args.runs, vendor)
        )
        row.update(torch_rows(module, name, feed, batch, args.runs, args.systems))
        merge_row(row, worker.get(str(batch), {}), ref, fp8ort.sqnr_db)
        entry[str(batch)] = row
        shown = [f"{k} {v['per_s']:.0f}/s" if "per_s" in v else f"{k} {v['error'][:80]}" for k, v in row.items()]
        print(f"{name} batch {batch}: " + ", ".join(shown), flush=True)
    return entry


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


def build_record(args: argparse.Namespace, results: dict) -> dict:
    workers = [e["ort_cuda"] for e in results.values() if "ort_cuda" in e]
    gpu_versions = [w["onnxruntime"] for w in workers if "onnxruntime" in w and "error" not in w]
    return {
        "benchmark": "exported models through fp8ort's plugin EP, against ORT CUDA EP FP16 and PyTorch FP16",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "gpu": gpu_name(),
        "onnxruntime": ort.__version__,
        "onnxruntime_gpu": gpu_versions[0] if gpu_versions else None,
        "fp8ort": fp8ort.__version__,
        "date": datetime.date.today().isoformat(),
        "models": MODELS_NOTE,
        "timing": f"median of {args.runs} runs after {WARMUPS} warm-ups, each synchronized; IOBinding with device "
        "OrtValues (ORT), CUDA graph replay (PyTorch)",
        "systems": systems_note(results),
        "results": results,
    }


def systems_note(results: dict) -> dict[str, str]:
    """What each row key of the record means."""
    seen = {k for e in results.values() for k in systems_of(e)}
    return {k: LABELS.get(k, k) for k in [*(k for k in LABELS if k in seen), *sorted(seen - LABELS.keys())]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="JSON record to write (bench/results/h200.json)")
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--batches", type=int, nargs="+", default=None, help="default: 1 32 256 (BERT: 1 32)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--calibration", type=int, default=8, help="calibration samples (random data)")
    ap.add_argument("--systems", nargs="+", choices=SYSTEMS, default=["fp8ort", "ort_cuda", "fp8ort_cuda_ep", "torch"])
    ap.add_argument("--ort-gpu-site", default=None, help="folder holding onnxruntime-gpu (for the ort_cuda rows)")
    ap.add_argument("--torch-compile", action="store_true", help="add the torch.compile rows (slow to compile)")
    ap.add_argument("--update", action="store_true", help="lay the results over the existing --out record")
    ap.add_argument("--plot", action="store_true", help="also write <out>.png and <out>.md (bench/plot.py)")
    ap.add_argument(
        "--skip-pass",
        nargs="*",
        default=os.environ.get("BENCH_SKIP_PASS", "").split(),
        metavar="MODULE.CLASS",
        help="quantizer passes to leave out, for an A/B of one pass (e.g. qkv.PackQkvPass; default: $BENCH_SKIP_PASS)",
    )
    ap.add_argument(
        "--config",
        default=os.environ.get("BENCH_CONFIG", "{}"),
        metavar="JSON",
        help="QuantizeConfig fields to change, e.g. '{\"power_of_two_scales\": false}' (default: $BENCH_CONFIG)",
    )
    args = ap.parse_args(argv)
    try:
        args.config = fp8ort.QuantizeConfig().replace(**json.loads(args.config))
    except (ValueError, TypeError) as e:  # bad JSON, unknown fields, QuantizeError (a ValueError)
        ap.error(f"--config {args.config!r}: {e}")
    if args.config != fp8ort.QuantizeConfig():
        print(f"quantizer config changed: {args.config.to_dict()}", flush=True)
    for spec in args.skip_pass:
        module, _, cls = spec.rpartition(".")
        try:
            target = getattr(importlib.import_module(f"fp8ort.quantization.{module}"), cls)
        except (ImportError, AttributeError, ValueError):
            ap.error(f"--skip-pass {spec}: no such pass in fp8ort.quantization (give module.Class)")
        target.call = lambda self, model: ir.passes.PassResult(model, False)
        print(f"quantizer pass left out: {spec}", flush=True)
    if args.torch_compile and "torch_compile" not in args.systems:
        args.systems.append("torch_compile")
    if {"ort_cuda", "fp8ort_cuda_ep"} & set(args.systems) and not args.ort_gpu_site:
        print("ort_cuda and fp8ort_cuda_ep rows skipped: no --ort-gpu-site (see bench/NOTES.md)", file=sys.stderr)
        args.systems = [s for s in args.systems if s not in ("ort_cuda", "fp8ort_cuda_ep")]
    if (args.update or args.plot) and not args.out:
        ap.error("--update and --plot need --out")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    vendor = VENDOR_IDS.get(fp8ort.backend(), 0x10DE) if "fp8ort" in args.systems else 0  # backend() loads the library
    work = Path(tempfile.mkdtemp(prefix="fp8ort_ep_"))
    results = {name: bench_model(name, args, work, vendor) for name in args.models}
    record = build_record(args, results)
    if args.update and args.out.exists():
        record = update_record(json.loads(args.out.read_text()), record)
        record["systems"] = systems_note(record["results"])
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        if args.plot:
            for path in write_all(record, args.out):
                print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
