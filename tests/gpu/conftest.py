"""GPU test fixtures: the kernel library (ctypes) and a tiny device-memory helper; skip cleanly without a GPU.

The library is ``build/libfp8ort_kernels.so``, built by CMake with ``-DFP8ORT_GPU=cuda -DFP8ORT_KERNEL_TEST_LIB=ON``
(or the path in ``FP8ORT_KERNELS_LIB``). Device memory goes through the CUDA or HIP runtime that the library itself
loaded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gpu_lib import Runtime, load_kernels

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LIB = ROOT / "build" / "libfp8ort_kernels.so"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a GPU and the kernel library (skipped otherwise)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/gpu" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(scope="session")
def kernels_path() -> Path:
    return Path(os.environ.get("FP8ORT_KERNELS_LIB", DEFAULT_LIB))


@pytest.fixture(scope="session")
def kernels(kernels_path):
    path = kernels_path
    if not path.is_file():
        pytest.skip(f"{path} not built (cmake -DFP8ORT_GPU=cuda -DFP8ORT_KERNEL_TEST_LIB=ON)")
    try:
        lib = load_kernels(path)
        rt = Runtime()
    except OSError as e:
        pytest.skip(f"GPU runtime not loadable: {e}")
    if rt.device_count() == 0:
        pytest.skip("no GPU")
    return lib, rt


@pytest.fixture
def gpu(kernels):
    lib, rt = kernels
    yield lib, rt
    rt.free_all()
