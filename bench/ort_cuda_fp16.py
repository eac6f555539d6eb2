"""ORT CUDA EP FP16 baselines, a worker of plugin_ep_gpu.py run with onnxruntime-gpu on PYTHONPATH.

    PYTHONPATH=/tmp/ortsite python3 bench/ort_cuda_fp16.py resnet50 /tmp/x/resnet50.onnx --batches 1 32 256 \
        --work /tmp/x/ort_cuda [--runs 20] [--device cpu]

It runs in its own process because the stock onnxruntime wheel (which runs fp8ort's plugin EP) and onnxruntime-gpu
cannot be imported side by side. It prints one JSON object as the last line of stdout (everything else goes to
stderr) and saves each system's first output as .npy under --work, for plugin_ep_gpu.py to compare with the float
model. A failure in one configuration becomes an ``{"error": ...}`` entry; the others still run.

The FP16 models come from the float export that fp8ort quantizes, converted by ORT's own converter
(``onnxruntime.transformers.float16.convert_float_to_float16``, FP16 inputs/outputs). Why not export again from
torch with ``.half()``: the FP16, FP8 and PyTorch rows then share one graph, so the rows compare runtimes rather than
two exporters; it is the converter ORT documents for its CUDA EP, and it rewrites Cast and Constant nodes and keeps
ops without FP16 kernels in float32 behind casts, where casting only initializers and I/O breaks BERT (its mask
arithmetic casts to float); and the worker needs no torch and no second copy of the model code.

Systems (row keys): CNNs: ``ort_cuda_fp16_nhwc_graph`` (prefer_nhwc=1, enable_cuda_graph=1: ORT's best) and
``ort_cuda_fp16`` (the defaults). BERT: ``ort_cuda_fp16_opt_graph`` / ``ort_cuda_fp16_opt``: ORT's transformer
optimizer (``optimize_model(model_type="bert", num_heads=12, hidden_size=768)``: Attention, SkipLayerNormalization
and Gelu fused) then FP16, with and without CUDA graph; ``ort_cuda_fp16_graph`` / ``ort_cuda_fp16``: the plain FP16
export, with and without CUDA graph. The optimizer runs once per batch size with the batch dimension fixed first:
with it dynamic, the shape arithmetic in front of each attention's Reshape hides the pattern and Attention is not
fused (seen on the CPU machine, 2026-12-03). The CUDA-graph sessions also fix the batch dimension
(``add_free_dimension_override_by_name``): ORT then folds the shape computations, so that every node can sit on the
CUDA EP, which graph capture requires.

With ``--fp8 MODEL`` (fp8ort's quantized model of the same export) the worker also times fp8ort's custom-op route:
the library at ``$FP8ORT_LIBRARY`` registered with ``register_custom_ops_library`` and the model run on ORT's CUDA
EP (``fp8ort_cuda_ep``, and ``fp8ort_cuda_ep_graph`` with enable_cuda_graph=1), so that the plugin EP and the
CUDA-EP route are measured on the same model in the same run.

Timing: IOBinding, inputs as device OrtValues, outputs preallocated on the device where their shape is known;
median of --runs runs after --warmups (10) warm-ups (the CUDA graph is captured in them), each synchronized.
``--device cpu`` runs the same code on the CPU EP (no graph capture) to check the worker without a GPU.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from harness import (
    BATCH_DIM,
    BERT_HEADS,
    BERT_HIDDEN,
    WARMUPS,
    error_entry,
    make_inputs,
    median_seconds,
    ort_cuda_systems,
)
from harness import timing_row as row_of

# row key: (FP16 model variant, prefer_nhwc, enable_cuda_graph)
CONFIGS: dict[str, tuple[str, bool, bool]] = {
    "ort_cuda_fp16_nhwc_graph": ("plain", True, True),
    "ort_cuda_fp16_graph": ("plain", False, True),
    "ort_cuda_fp16": ("plain", False, False),
    "ort_cuda_fp16_opt_graph": ("opt", False, True),
    "ort_cuda_fp16_opt": ("opt", False, False),
}
NUMPY_TYPES = {
    "tensor(float16)": np.float16,
    "tensor(float)": np.float32,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}


def describe(key: str, device: str) -> str:
    variant, nhwc, graph = CONFIGS[key]
    nhwc, graph = nhwc and device == "cuda", graph and device == "cuda"
    model = "transformer optimizer + FP16" if variant == "opt" else "FP16 conversion of the export"
    opts = [o for o, on in (("prefer_nhwc=1", nhwc), ("enable_cuda_graph=1, batch fixed", graph)) if on]
    ep = "CUDA EP" if device == "cuda" else "CPU EP (check run)"
    return f"{ep}, {model}" + (f", {', '.join(opts)}" if opts else ", default options")


class Fp16Models:
    """The FP16 models, built on first use and kept (a failed build is kept too and raised again)."""

    def __init__(self, fp32: Path, work: Path, device: str) -> None:
        self.fp32, self.work, self.device = fp32, work, device
        self.info: dict[str, dict] = {}
        self._built: dict[str, Path | Exception] = {}

    def get(self, variant: str, batch: int) -> Path:
        tag = "plain" if variant == "plain" else f"opt_b{batch}"
        if tag not in self._built:
            t0 = time.perf_counter()
            try:
                path, info = self._plain() if variant == "plain" else self._optimized(batch)
                self._built[tag] = path
                self.info[tag] = {"build_s": time.perf_counter() - t0, **info}
            except Exception as exc:  # reported in the JSON, the other variant still runs
                self._built[tag] = exc
                self.info[tag] = error_entry(exc)
        built = self._built[tag]
        if isinstance(built, Exception):
            raise RuntimeError(f"FP16 model {tag} could not be built: {self.info[tag]['error']}")
        return built

    def _plain(self) -> tuple[Path, dict]:
        from onnxruntime.transformers.float16 import convert_float_to_float16

        m = convert_float_to_float16(onnx.load(str(self.fp32)), keep_io_types=False)
        path = self.work / "fp16.onnx"
        onnx.save(m, str(path))
        return path, {"nodes": len(m.graph.node), "casts": sum(n.op_type == "Cast" for n in m.graph.node)}

    def _optimized(self, batch: int) -> tuple[Path, dict]:
        from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed
        from onnxruntime.transformers.optimizer import optimize_model

        m = onnx.load(str(self.fp32))
        make_dim_param_fixed(m.graph, BATCH_DIM, batch)
        fix_output_shapes(m)
        opt = optimize_model(
            m,
            model_type="bert",
            num_heads=BERT_HEADS,
            hidden_size=BERT_HIDDEN,
            opt_level=1,
            use_gpu=self.device == "cuda",
        )
        fused = {op: n for op, n in opt.get_fused_operator_statistics().items() if n}
        opt.convert_float_to_float16(keep_io_types=False)
        path = self.work / f"fp16_opt_b{batch}.onnx"
        opt.save_model_to_file(str(path))
        return path, {"fused_ops": fused, "nodes": len(opt.model.graph.node)}


FP8_CONFIGS: dict[str, bool] = {"fp8ort_cuda_ep": False, "fp8ort_cuda_ep_graph": True}  # row key: CUDA graph


def make_session(
    path: Path, device: str, nhwc: bool, graph: bool, batch: int, custom_ops: str | None = None
) -> ort.InferenceSession:
    so = ort.SessionOptions()
    if custom_ops:
        so.register_custom_ops_library(custom_ops)
    if graph:
        so.add_free_dimension_override_by_name(BATCH_DIM, batch)
    if device == "cuda":
        opts = {"device_id": "0", "prefer_nhwc": str(int(nhwc)), "enable_cuda_graph": str(int(graph))}
        sess = ort.InferenceSession(str(path), so, providers=[("CUDAExecutionProvider", opts)])
        if sess.get_providers()[0] != "CUDAExecutionProvider":
            raise RuntimeError(f"the session did not get the CUDA EP (providers {sess.get_providers()})")
        return sess
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def output_shape(dims: list, batch: int) -> list[int] | None:
    """The output's shape with the batch dimension filled in; None if another dimension is symbolic."""
    shape = [batch if i == 0 and not isinstance(d, int) else d for i, d in enumerate(dims)]
    return shape if all(isinstance(d, int) for d in shape) else None


def time_session(
    sess: ort.InferenceSession, feed: dict[str, np.ndarray], device: str, batch: int, runs: int, warmups: int
) -> tuple[float, np.ndarray]:
    """Median seconds per run with inputs (and, where the shape is known, outputs) bound as device OrtValues."""
    binding = sess.io_binding()
    keep = []
    for inp in sess.get_inputs():
        v = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(feed[inp.name].astype(NUMPY_TYPES[inp.type])), device)
        keep.append(v)
        binding.bind_ortvalue_input(inp.name, v)
    for out in sess.get_outputs():
        shape = output_shape(list(out.shape), batch)
        if shape is None:
            binding.bind_output(out.name, device)
        else:
            y = ort.OrtValue.ortvalue_from_shape_and_type(shape, NUMPY_TYPES[out.type], device)
            keep.append(y)
            binding.bind_ortvalue_output(out.name, y)
    sec = median_seconds(lambda: sess.run_with_iobinding(binding), binding.synchronize_outputs, runs, warmups)
    return sec, binding.copy_outputs_to_cpu()[0]


def run(
    name: str,
    fp32: Path,
    batches: list[int],
    runs: int,
    warmups: int,
    work: Path,
    device: str,
    fp8: Path | None = None,
) -> dict:
    systems = ort_cuda_systems(name)
    library = os.environ.get("FP8ORT_LIBRARY")
    if fp8 is not None and not library:
        raise SystemExit("--fp8 needs FP8ORT_LIBRARY (the libfp8ort.so to register as a custom-op library)")
    record: dict = {
        "worker": "ort_cuda_fp16",
        "model": name,
        "onnxruntime": ort.__version__,
        "device": device,
        "providers": ort.get_available_providers(),
        "configs": {key: describe(key, device) for key in systems},
        "fp8_model": str(fp8) if fp8 else None,
        "results": {},
    }
    if device == "cuda" and "CUDAExecutionProvider" not in record["providers"]:
        record["error"] = f"onnxruntime {ort.__version__} from {ort.__file__} has no CUDAExecutionProvider"
        return record
    models = Fp16Models(fp32, work, device)
    for batch in batches:
        feed = make_inputs(name, batch, seed=2)
        row: dict = {}
        record["results"][str(batch)] = row
        # (row key, FP16 variant name or the FP8 model's path, prefer_nhwc, CUDA graph, custom-op library)
        timed: list[tuple[str, str | Path, bool, bool, str | None]] = [(key, *CONFIGS[key], None) for key in systems]
        if fp8 is not None:
            timed += [(key, fp8, False, graph, library) for key, graph in FP8_CONFIGS.items()]
        for key, model, nhwc, graph, custom_ops in timed:
            graph = graph and device == "cuda"
            try:
                path = models.get(model, batch) if isinstance(model, str) else model
                sess = make_session(path, device, nhwc, graph, batch, custom_ops)
                sec, y = time_session(sess, feed, device, batch, runs, warmups)
                out = work / f"{key}_b{batch}.npy"
                np.save(out, y)
                row[key] = row_of(batch, sec, output=str(out))
            except Exception as exc:  # one configuration failing must not hide the others
                row[key] = error_entry(exc)
            sess = None
            gc.collect()
            shown = f"{row[key]['per_s']:.0f}/s" if "per_s" in row[key] else row[key]["error"][:120]
            print(f"{name} batch {batch} {key}: {shown}", file=sys.stderr, flush=True)
    record["fp16"] = models.info
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=["resnet50", "efficientnet_b0", "bert"])
    ap.add_argument("onnx", type=Path, help="the float export")
    ap.add_argument("--batches", type=int, nargs="+", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmups", type=int, default=WARMUPS, help="untimed runs first (graph capture happens here)")
    ap.add_argument("--work", type=Path, required=True, help="folder for the FP16 models and the outputs (.npy)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--fp8", type=Path, default=None, help="fp8ort's FP8 model: also time the CUDA-EP custom-op route")
    args = ap.parse_args(argv)
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    stdout, sys.stdout = sys.stdout, sys.stderr  # the optimizer and converters print: keep stdout for the JSON
    try:
        record = run(args.model, args.onnx, args.batches, args.runs, args.warmups, args.work, args.device, args.fp8)
    finally:
        sys.stdout = stdout
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
