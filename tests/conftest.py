"""Shared fixtures: the library under test, fresh random inputs (seed printed for reproduction), ORT runs."""

from __future__ import annotations

import os

import numpy as np
import pytest

_SEED = int(os.environ.get("FP8ORT_TEST_SEED", np.random.SeedSequence().entropy % (2**32)))


def pytest_report_header(config):
    return f"fp8ort test seed: {_SEED} (set FP8ORT_TEST_SEED={_SEED} to reproduce)"


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the session seed and the test id: fresh each run, reproducible by seed."""
    digest = abs(hash(request.node.nodeid)) % (2**31)
    return np.random.default_rng([_SEED, digest])


@pytest.fixture(scope="session")
def library() -> str:
    import fp8ort

    return fp8ort.get_library_path()
