"""Pieces of the GPU benchmark shared by its parts (NumPy and the standard library only).

``plugin_ep_gpu.py`` (stock onnxruntime, fp8ort's plugin EP, PyTorch) and ``ort_cuda_fp16.py`` (onnxruntime-gpu,
run as a subprocess because the two onnxruntime wheels cannot share a process) build the same inputs, time the same
way, and write rows of the same shape: ``entry[str(batch)][system] = {"ms", "per_s", ...}`` or ``{"error": ...}``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

MODELS = ("resnet50", "efficientnet_b0", "bert")
BERT_SEQ = 128
BERT_VOCAB = 30522
BERT_HEADS = 12
BERT_HIDDEN = 768
BATCH_DIM = "N"  # the exports' dynamic batch dimension
WARMUPS = 10
WORKER = Path(__file__).resolve().parent / "ort_cuda_fp16.py"
WORKER_TIMEOUT_S = 480


def default_batches(name: str) -> list[int]:
    return [1, 32] if name == "bert" else [1, 32, 256]


def make_inputs(name: str, batch: int, seed: int) -> dict[str, np.ndarray]:
    """Random inputs of the exports (the worker builds the same ones from the same seed)."""
    rng = np.random.default_rng(seed)
    if name == "bert":
        return {
            "input_ids": rng.integers(0, BERT_VOCAB, (batch, BERT_SEQ), dtype=np.int64),
            "attention_mask": np.ones((batch, BERT_SEQ), dtype=np.int64),
        }
    return {"input": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def error_entry(exc: BaseException) -> dict[str, str]:
    """One failed measurement as a row value: the exception's type and first line."""
    lines = str(exc).strip().splitlines() or [""]
    return {"error": f"{type(exc).__name__}: {lines[0][:300]}"}


def median_seconds(step: Callable[[], object], sync: Callable[[], object], runs: int, warmups: int = WARMUPS) -> float:
    """Median wall time of ``step(); sync()`` over ``runs`` runs after ``warmups`` untimed ones."""
    for _ in range(warmups):
        step()
    sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timing_row(batch: int, seconds: float, **extra: object) -> dict[str, object]:
    return {"ms": seconds * 1e3, "per_s": batch / seconds, **extra}


def ort_cuda_systems(name: str) -> list[str]:
    """The row keys the ORT CUDA EP worker writes for a model (also the keys a failed worker marks as errors)."""
    if name == "bert":  # no convolutions: prefer_nhwc does nothing; the optimizer route is ORT's best for BERT
        return ["ort_cuda_fp16_opt_graph", "ort_cuda_fp16_opt", "ort_cuda_fp16_graph", "ort_cuda_fp16"]
    return ["ort_cuda_fp16_nhwc_graph", "ort_cuda_fp16"]


def run_worker(
    site: str,
    name: str,
    onnx_path: Path,
    batches: list[int],
    runs: int,
    work: Path,
    *,
    warmups: int = WARMUPS,
    device: str = "cuda",
    timeout_s: float = WORKER_TIMEOUT_S,
    command: list[str] | None = None,
    fp8: Path | None = None,
) -> dict:
    """Runs the ORT CUDA EP worker with ``PYTHONPATH=site``; returns its JSON object, or ``{"error": ...}``.

    ``command`` replaces ``[python, ort_cuda_fp16.py]`` (tests use it to stand in a fake worker); ``fp8`` (fp8ort's
    model of the same export) adds the CUDA-EP custom-op route rows.
    """
    argv = [*(command or [sys.executable, str(WORKER)]), name, str(onnx_path), "--work", str(work)]
    argv += ["--runs", str(runs), "--warmups", str(warmups), "--device", device, "--batches", *map(str, batches)]
    if fp8 is not None:
        argv += ["--fp8", str(fp8)]
    env = {**os.environ, "PYTHONPATH": site}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"worker: no result within {timeout_s:.0f} s ({' '.join(argv[-8:])})"}
    except OSError as exc:
        return {"error": f"worker: could not start: {exc}"}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no stderr"])[-1][:300]
        return {"error": f"worker: exit status {proc.returncode}: {tail}"}
    try:
        record = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        return {"error": f"worker: last stdout line is not JSON ({exc}): {lines[-1][:200]}"}
    if not isinstance(record, dict) or not isinstance(record.get("results", {}), dict):
        return {"error": "worker: the JSON object has no 'results' object"}
    return record


def worker_rows(record: dict, name: str, batches: list[int]) -> dict[str, dict]:
    """Rows by batch from a worker record; a worker that failed as a whole marks each of its systems with its error."""
    if "error" in record:
        failed = {"error": record["error"]}
        return {str(b): {key: dict(failed) for key in ort_cuda_systems(name)} for b in batches}
    return {str(b): dict(record.get("results", {}).get(str(b), {})) for b in batches}


def merge_row(
    row: dict,
    worker_row: dict,
    ref: np.ndarray | None = None,
    sqnr: Callable[[np.ndarray, np.ndarray], float] | None = None,
) -> None:
    """Adds the worker's systems to one batch row; an ``output`` file (.npy) becomes ``sqnr_db_vs_fp32`` if a
    float reference and a metric are given, and is dropped from the row either way."""
    for key, value in worker_row.items():
        value = dict(value)
        out = value.pop("output", None)
        if out and ref is not None and sqnr is not None:
            try:
                value["sqnr_db_vs_fp32"] = float(sqnr(ref, np.load(out).astype(np.float32)))
            except (OSError, ValueError) as exc:
                value["sqnr_error"] = error_entry(exc)["error"]
        row[key] = value


def worker_summary(record: dict) -> dict:
    """What the model entry keeps of a worker record besides its rows."""
    return {k: v for k, v in record.items() if k not in ("results", "model")}


def update_record(old: dict, new: dict) -> dict:
    """``new`` laid over ``old`` for ``--update``: per model, per batch row, per system; scalars from ``new``."""
    merged = {**old, **{k: v for k, v in new.items() if k != "results" and v is not None}}
    merged["commands"] = [*old.get("commands", [old.get("command", "")]), new.get("command", "")]
    results = {name: dict(entry) for name, entry in old.get("results", {}).items()}
    for name, entry in new.get("results", {}).items():
        target = results.setdefault(name, {})
        if "error" in entry or "error" in target:  # a model that failed (or failed before) is replaced whole
            results[name] = dict(entry)
            continue
        for key, value in entry.items():
            if key.isdigit() and isinstance(value, dict):
                target[key] = {**target.get(key, {}), **value}
            else:
                target[key] = value
    merged["results"] = results
    return merged
