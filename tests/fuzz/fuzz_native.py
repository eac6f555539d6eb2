"""Fuzz the native library's model load and run: mutated bytes (or structured edits: hostile attributes, shapes,
element types) of quantized models with com.fp8ort ops are loaded into a session (custom-op route or the plugin
EP's CPU device) and run on inputs made from the model's declared inputs.

The sessions live in a worker process (``--worker``), fed one model at a time through a pipe, under an address
space limit so that a huge allocation fails instead of exhausting the machine. An error of ORT or of our kernels
is a clean rejection; the worker dying (a signal, an abort, any exit) or hanging is a finding, and the input that
did it is saved. The worker is restarted after a finding.

Usage: python -m tests.fuzz.fuzz_native [--time S] [--seed N] [--crash-dir D] [--no-atheris] [INPUT...]
"""

from __future__ import annotations

import os
import re
import select
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

from tests.fuzz import _driver, _mutate

DEFAULT_TIME_S = 60
WORKER_TIMEOUT_S = 30  # one load + run; more is a hang
WORKER_MEMORY = 6 << 30  # the worker's address space limit (RLIMIT_AS)
MAX_ELEMENTS = 1 << 18  # an input's element count: a dimension that is unknown or larger is shrunk to fit
ROOT = Path(__file__).resolve().parents[2]


ASAN_CANNOT_THROW = re.compile(
    r"AddressSanitizer: (requested allocation size .* exceeds maximum supported size|"
    r"allocator is out of memory trying to allocate)"
)


class Crash(Exception):
    """The worker died or hung on an input."""


# ------------------------------------------------------------------------------------------------ seeds


def _seed_models() -> list[onnx.ModelProto]:
    """A quantized CNN (FP8Conv with activations and a residual, FP8MatMul) from the quantizer's test models, and
    one-op models that use the optional inputs and attributes the CNN leaves out (FP8MaxPool on FP8 data too)."""
    import onnx_ir as ir

    import fp8ort
    from fp8ort import numerics as nx
    from fp8ort import ops
    from tests.quantization import qmodels

    m = qmodels.resnetish()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cnn = ir.to_proto(fp8ort.quantize(m, calibration_data=qmodels.calib(m, n=4)))
    rng = np.random.default_rng(0)
    f32 = np.float32

    def fp8(shape):
        return nx.quantize(rng.standard_normal(shape).astype(f32), f32(0.05), nx.E4M3FN)

    conv = ops.make_op_model(
        "FP8Conv",
        {
            "X": rng.standard_normal((1, 6, 6, 4)).astype(f32),
            "W": fp8((8, 4, 3, 3)),
            "x_scale": f32(0.05),
            "w_scale": np.full(8, 0.05, f32),
            "B": np.zeros(8, f32),
            "Z": np.ones((1, 6, 6, 8), f32),
            "z_scale": f32(1),
            "y_scale": f32(0.1),
        },
        layout="NHWC",
        pads=[1, 1, 1, 1],
        activation="Clip",
        activation_alpha=0.0,
        activation_beta=6.0,
        output_dtype=onnx.TensorProto.FLOAT8E4M3FN,
    )
    matmul = ops.make_op_model(
        "FP8MatMul",
        {
            "A": rng.standard_normal((2, 3, 16)).astype(f32),
            "B": fp8((8, 16)),
            "a_scale": f32(0.05),
            "b_scale": np.full(8, 0.05, f32),
            "C": np.zeros(8, f32),
            "Z": fp8((2, 3, 8)),
            "z_scale": f32(0.05),
        },
        graph_inputs=["A", "Z"],
        transB=1,
        activation="Gelu",
    )
    quant = ops.make_op_model("FP8Quantize", {"X": rng.standard_normal((4, 5)).astype(f32), "scale": f32(0.1)})
    dequant = ops.make_op_model(
        "FP8Dequantize", {"X": fp8((4, 5)), "scale": f32(0.1)}, output_dtype=onnx.TensorProto.FLOAT16
    )
    pool = ops.make_op_model(
        "FP8MaxPool", {"X": fp8((1, 7, 7, 8))}, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1
    )
    return [cnn, conv, matmul, quant, dequant, pool]


# ------------------------------------------------------------------------------------------------ worker


def _feeds(model: onnx.ModelProto) -> dict:
    """An OrtValue per graph input that is not an initializer, from its declared type and shape."""
    import onnxruntime as ort

    from fp8ort import numerics as nx

    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds, keep = {}, []
    for v in model.graph.input:
        if v.name in inits or not v.type.HasField("tensor_type"):
            continue
        tt = v.type.tensor_type
        dims = [
            d.dim_value if d.HasField("dim_value") and 0 <= d.dim_value <= MAX_ELEMENTS else 2 for d in tt.shape.dim
        ]
        while dims and int(np.prod(dims, dtype=np.float64)) > MAX_ELEMENTS:
            dims[int(np.argmax(dims))] //= 2
        t = tt.elem_type
        if nx.is_fp8(t):
            raw = rng.integers(0, 256, dims, dtype=np.uint8)
            value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, t)
        elif t == onnx.TensorProto.BFLOAT16:
            raw = rng.integers(0, 2**16, dims, dtype=np.uint16)
            value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, t)
        else:
            try:
                dtype = onnx.helper.tensor_dtype_to_np_dtype(t)
            except Exception:
                continue  # no NumPy type: the run reports the missing input
            if dtype.kind not in "fiub":
                continue
            raw = (rng.standard_normal(dims) * 4).astype(dtype)
            value = ort.OrtValue.ortvalue_from_numpy(raw)
        keep.append(raw)
        feeds[v.name] = value
    return feeds, keep


def _load_and_run(data: bytes, route: str) -> str:
    import fp8ort
    from fp8ort import ops

    try:
        model = onnx.load_from_string(data)
    except Exception as exc:
        return f"not a model: {type(exc).__name__}"
    try:
        if route == "custom_op":
            sess = ops.session(data, threads=2)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sess = fp8ort.InferenceSession(data, device="cpu")
        feeds, keep = _feeds(model)
        sess.run_with_ort_values(None, feeds)
        del keep
    except Exception as exc:  # a clean rejection by ORT or by our kernels
        return f"error: {type(exc).__name__}"
    if os.environ.get("FP8ORT_FUZZ_PLANT") == "1":
        os.abort()  # tests/security/test_fuzz_regressions.py: the harness must report a dying worker
    return "ran"


def worker() -> None:
    """Reads (route byte, length, model bytes) records on stdin; answers one line per record on stdout."""
    import resource

    if "libasan" not in os.environ.get("LD_PRELOAD", ""):  # ASan reserves terabytes of shadow address space
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    import onnxruntime  # noqa: F401  (loaded before the first record, so its time is not a record's)

    stdin, stdout = sys.stdin.buffer, sys.stdout
    while True:
        head = stdin.read(5)
        if len(head) < 5:
            return
        route = "custom_op" if head[0] == 0 else "ep"
        data = stdin.read(struct.unpack("<I", head[1:])[0])
        stdout.write(_load_and_run(data, route) + "\n")
        stdout.flush()


# ------------------------------------------------------------------------------------------------ parent


class Worker:
    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.stderr = tempfile.TemporaryFile()  # the worker's last words, read when it dies
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.fuzz_native", "--worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def last_words(self) -> str:
        """The end of the dead worker's stderr, ORT's log lines left out."""
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").splitlines()
        text = "\n".join(ln for ln in lines if "[E:onnxruntime" not in ln and "[W:onnxruntime" not in ln)
        report = re.search(r"runtime error:|ERROR: AddressSanitizer|Fatal Python error|terminate called", text)
        start = max(0, text.rfind("\n", 0, report.start()) + 1) if report else max(0, len(text) - 3000)
        return text[start : start + 3000]

    def run(self, data: bytes, route: int) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        proc = self.proc
        try:
            proc.stdin.write(bytes([route]) + struct.pack("<I", len(data)) + data)
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([proc.stdout], [], [], WORKER_TIMEOUT_S)
        line = proc.stdout.readline().decode(errors="replace").strip() if ready else None
        if line:
            return line
        if line is None:
            self.stop()
            raise Crash(f"the worker hung for {WORKER_TIMEOUT_S} s ({'custom_op' if route == 0 else 'ep'} route)")
        rc = proc.wait(timeout=30)
        self.proc = None
        words = self.last_words()
        if ASAN_CANNOT_THROW.search(words):
            # Under tools/sanitize.sh's runtime: ASan aborts on an operator new past its allocator's limit instead
            # of throwing std::bad_alloc (which our kernels turn into an error); not a finding of ours.
            return "error: allocation too large for ASan"
        how = f"signal {-rc}" if rc < 0 else f"exit status {rc}"
        raise Crash(f"the worker died with {how} ({'custom_op' if route == 0 else 'ep'} route); stderr:\n{words}")


_WORKER = Worker()
OUTCOMES: Counter[str] = Counter()  # the worker's answers: ran, error: <type>, not a model
_SEEDS: list[onnx.ModelProto] = []


def target(data: bytes) -> None:
    """Load and run the model the input stands for, on the route its first byte's bit 1 picks."""
    if not _SEEDS:
        _SEEDS.extend(_seed_models())
    raw = _mutate.model_bytes(_SEEDS, data)
    route = (data[0] >> 1) & 1 if data else 0
    OUTCOMES[_WORKER.run(raw, route)] += 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        worker()
        return 0
    _SEEDS.extend(_seed_models())
    start = time.monotonic()
    try:
        return _driver.run("fuzz_native", target, _SEEDS[0].SerializeToString(), argv, DEFAULT_TIME_S, coverage=False)
    finally:
        _WORKER.stop()
        top = ", ".join(f"{k}: {n}" for k, n in OUTCOMES.most_common(6))
        print(f"fuzz_native: done in {time.monotonic() - start:.0f} s; outcomes: {top}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
