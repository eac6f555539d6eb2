"""Untrusted models (issue 14): the bad-input corpus of ``bad_cases.py`` through the custom-op route and the plugin
EP's CPU device (and its GPU device where the library has one), each run in a child process so that a crash fails a
test instead of killing pytest; and the quantizer on damaged files and hostile sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import fp8ort.quantization as fq

from ..quantization import qmodels
from .bad_cases import CASES

ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 240
ROUTES = ("custom_op", "ep", "ep_gpu")
# What the GPU device does differently from the CPU: strict xfails, so a fix shows up as an XPASS to delete here.
# Found on the H200 on 2026-12-04 (bench/results/logs_h200_2026-12-04/bad_models_gpu.log); the last two (a degenerate
# convolution: an empty input plane, strides above 2^20) fixed by a host-side rewrite, XPASS on 2026-12-05
# (bench/results/logs_h200_2026-12-05/HOW.md). None left; no case ever crashed.
GPU_KNOWN: dict[str, str] = {}
# Cases a run leaves out, comma-separated: tools/sanitize.sh skips the one that asks for more memory than exists,
# which AddressSanitizer's allocator aborts on (it cannot make a failed operator new throw) instead of failing it.
SKIPPED = {n for n in os.environ.get("FP8ORT_BAD_CASES_SKIP", "").split(",") if n}


def _run_child(route: str, seed: int, library: str) -> tuple[dict[str, dict], str | None, str]:
    """Every case on ``route`` in one child process: the results by case, the case it died in (if it did), stderr."""
    env = dict(os.environ, FP8ORT_LIBRARY=library)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.security.bad_cases", route, str(seed)]
            + ([n for n in CASES if n not in SKIPPED] if SKIPPED else []),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
        )
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, rc = f"timed out after {CHILD_TIMEOUT_S} s", -1
    results, begun = {}, None
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if "begin" in rec:
            begun = rec["begin"]
        else:
            results[rec.pop("case")] = rec
    died_in = begun if (rc != 0 and begun not in results) else None
    return results, died_in, f"exit status {rc}; stderr tail: {err[-2000:]}"


def _has_gpu_device(library: str) -> bool:
    """Whether the plugin EP of ``library`` offers a GPU device here (asked in a child: no GPU runtime in pytest)."""
    probe = "import fp8ort; print(any(dict(d.ep_metadata).get('fp8ort.device') == 'gpu' for d in fp8ort.ep_devices()))"
    env = dict(os.environ, FP8ORT_LIBRARY=library)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    return proc.stdout.strip().endswith("True")


@pytest.fixture(scope="module")
def corpus(library, request) -> dict:
    seed = int(np.random.SeedSequence().entropy % (2**31))
    gpu = _has_gpu_device(library)
    runs = {route: _run_child(route, seed, library) for route in ROUTES if route != "ep_gpu" or gpu}
    return runs | {"seed": seed}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(CASES))
def test_bad_op_input(name, route, corpus, request):
    if route == "ep_gpu" and name in GPU_KNOWN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"GPU device: {GPU_KNOWN[name]}"))
    if name in SKIPPED:
        pytest.skip(f"{name} left out by FP8ORT_BAD_CASES_SKIP")
    if route not in corpus:
        pytest.skip("the plugin EP offers no GPU device here")
    results, died_in, why = corpus[route]
    seed = corpus["seed"]
    assert died_in != name, f"{name} on {route} killed the process (seed {seed}): {why}"
    assert name in results, f"{name} on {route} did not run: the child died in {died_in} first ({why})"
    got, case = results[name], CASES[name]
    if case.patterns:
        assert "error" in got, f"{name} on {route} ran without an error: {got}"
        for p in case.patterns:
            assert p in got["error"], f"{p!r} not in the error of {name} on {route}: {got['error']}"
    else:
        assert "error" not in got, f"{name} on {route} failed: {got.get('error')}"
        assert tuple(got["shape"]) == case.out_shape and got["finite"], got


def test_child_harness_reports_a_crash(tmp_path):
    """The harness itself: a child that dies with a signal is named as the case it died in (the test can fail)."""
    script = tmp_path / "crash.py"
    script.write_text(
        'import json, os, signal\nprint(json.dumps({"begin": "boom"}), flush=True)\n'
        "os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -11 and '"begin": "boom"' in proc.stdout


# ------------------------------------------------------------------------------------------- the quantizer


@pytest.fixture
def resnetish():
    return qmodels.resnetish()


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.7, 0.97])
def test_quantizer_truncated_anywhere(tmp_path, resnetish, fraction, rng):
    data = ir.to_proto(resnetish).SerializeToString()
    cut = max(1, int(len(data) * fraction) + int(rng.integers(-8, 8)))
    p = tmp_path / "m.onnx"
    p.write_bytes(data[:cut])
    with pytest.raises(fq.QuantizeError, match=r"truncated|not a readable|empty graph|not ONNX"):
        fq.quantize(str(p), calibration_data=qmodels.calib(resnetish))


def test_quantizer_empty_file(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(b"")
    with pytest.raises(fq.ModelLoadError, match="empty graph|not a readable"):
        fq.quantize(str(p), calibration_data={})


def test_quantizer_corrupt_bytes(tmp_path, resnetish, rng):
    """Random bytes overwritten: a clear QuantizeError or a model that still checks, never another exception."""
    data = bytearray(ir.to_proto(resnetish).SerializeToString())
    for _ in range(5):
        where = rng.integers(0, len(data), 16)
        for i in where:
            data[i] = int(rng.integers(0, 256))
        p = tmp_path / "m.onnx"
        p.write_bytes(bytes(data))
        try:
            q = fq.quantize(str(p), calibration_data=qmodels.calib(resnetish))
        except fq.QuantizeError as exc:
            assert str(exc), "an empty error message"
        else:
            onnx.checker.check_model(q, full_check=True)


def test_quantizer_truncated_external_data(tmp_path, resnetish):
    path = tmp_path / "m.onnx"
    onnx.save(ir.to_proto(resnetish), str(path), save_as_external_data=True, location="m.weights", size_threshold=0)
    weights = tmp_path / "m.weights"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(fq.ModelLoadError, match="external data .* cannot be read|truncated"):
        fq.quantize(str(path), calibration_data=qmodels.calib(resnetish))


def test_quantizer_initializer_with_huge_dims(resnetish):
    """A weight whose dims claim 2^40 x 2^40 elements over 16 bytes of data: refused, no allocation attempted."""
    proto = ir.to_proto(resnetish)
    w = proto.graph.initializer[0]
    w.ClearField("dims")
    w.dims.extend([2**40, 2**40, 1, 1])
    with pytest.raises((fq.QuantizeError, ValueError)) as info:
        fq.quantize(proto, calibration_data=qmodels.calib(resnetish))
    assert w.name in str(info.value) or "size" in str(info.value) or "shape" in str(info.value), str(info.value)


def test_quantizer_graph_input_with_huge_dim(resnetish):
    """A declared input dimension of 2^62 while the calibration data is small: a clear error naming the input."""
    proto = ir.to_proto(resnetish)
    proto.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 2**62
    with pytest.raises(fq.QuantizeError) as info:
        fq.quantize(proto, calibration_data=qmodels.calib(resnetish))
    assert "x" in str(info.value)


def test_quantizer_node_with_missing_input(resnetish):
    """A node reading a value nothing produces: refused with a QuantizeError naming the value."""
    proto = ir.to_proto(resnetish)
    proto.graph.node[0].input[1] = "no_such_weight"
    with pytest.raises(fq.QuantizeError, match="no_such_weight"):
        fq.quantize(proto, calibration_data=qmodels.calib(resnetish))


def test_quantizer_weight_of_wrong_dtype():
    """An int64 Conv weight is not a float model: the Conv stays as it is or the model is refused, clearly."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.int64), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "g", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(fq.QuantizeError):
        fq.quantize(model, calibration_data=[{"x": np.ones((1, 2, 5, 5), np.float32)}])
