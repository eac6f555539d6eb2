"""The shared library: what it exports, and that onnxruntime loads it through both routes."""

from __future__ import annotations

import shutil
import subprocess

import onnxruntime as ort
import pytest

import fp8ort


def test_exports_only_the_three_entry_points(library):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    symbols = {line.split()[-1] for line in out.splitlines() if line.split() and line.split()[-2] in "TtWw"}
    assert symbols == {"RegisterCustomOps", "CreateEpFactories", "ReleaseEpFactory"}, symbols


def test_plugin_ep_library_registers_and_unregisters(library):
    def cpu_devices():
        ours = [d for d in ort.get_ep_devices() if d.ep_name == fp8ort.get_ep_name()]
        return [d for d in ours if dict(d.ep_metadata).get("fp8ort.device") == "cpu"]

    before = len(cpu_devices())  # another test may hold a registration of its own
    name = "fp8ort_test_registration"
    ort.register_execution_provider_library(name, library)
    try:
        # The factory offers the CPU device (ORT's CPU hardware device), naming the build's GPU backend.
        cpu = cpu_devices()
        assert len(cpu) == before + 1 and all(d.device.type == ort.OrtHardwareDeviceType.CPU for d in cpu)
        assert all(dict(d.ep_metadata)["fp8ort.backend"] in ("none", "cuda", "hip") for d in cpu)
    finally:
        ort.unregister_execution_provider_library(name)
    assert len(cpu_devices()) == before


def test_register_is_idempotent(library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)
    name = fp8ort.register("fp8ort_test_idempotent")
    try:
        assert fp8ort.register("fp8ort_test_idempotent") == name
    finally:
        ort.unregister_execution_provider_library(name)
        fp8ort._library._registered.discard(name)


def test_library_path_override_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("FP8ORT_LIBRARY", str(tmp_path / "missing.so"))
    with pytest.raises(FileNotFoundError, match="FP8ORT_LIBRARY"):
        fp8ort.get_library_path()


def test_custom_op_library_loads_in_many_sessions(library):
    """Registering the domain for many sessions keeps working (the domain objects live for the process)."""
    import numpy as np

    from fp8ort import ops

    x = np.linspace(-3, 3, 16, dtype=np.float32)
    model = ops.make_op_model("FP8Quantize", {"X": x, "scale": np.float32(0.01)})
    first = ops.run(ops.session(model, library), {"X": x})[0]
    for _ in range(10):
        np.testing.assert_array_equal(
            ops.run(ops.session(model, library), {"X": x})[0].view(np.uint8), first.view(np.uint8)
        )
