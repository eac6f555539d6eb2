"""Several GPUs in one host (issue 15): one EP device per GPU, a session per GPU, sessions on different GPUs at once.

Runs on any number of GPUs: the per-GPU checks loop over the GPU devices the EP offers (one on the H200 machine), the
concurrency check needs two and is skipped with a reason otherwise; everything is skipped without a GPU device.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fp8ort
from fp8ort import ops

EP = fp8ort.get_ep_name()


def _gpus() -> list:
    return sorted(
        (d for d in fp8ort.ep_devices() if dict(d.ep_metadata).get("fp8ort.device") == "gpu"),
        key=lambda d: int(dict(d.ep_metadata)["fp8ort.gpu_ordinal"]),
    )


@pytest.fixture(autouse=True)
def _need_gpu(library, monkeypatch):
    monkeypatch.setenv("FP8ORT_LIBRARY", library)
    if not _gpus():
        pytest.skip("fp8ort's EP offers no GPU device here")


def _model_and_feed(rng: np.random.Generator):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    w_scale = fp8ort.numerics.compute_scale(np.abs(w).max(axis=0))
    inputs = {
        "A": x,
        "B": fp8ort.numerics.quantize(w, w_scale[None, :]),
        "a_scale": fp8ort.numerics.compute_scale(np.abs(x).max()),
        "b_scale": w_scale,
    }
    return ops.make_op_model("FP8MatMul", inputs, graph_inputs=("A",)), {"A": x}


def test_one_device_per_gpu_with_distinct_ordinals_and_bus_ids():
    gpus = _gpus()
    meta = [dict(d.ep_metadata) for d in gpus]
    assert [int(m["fp8ort.gpu_ordinal"]) for m in meta] == list(range(len(gpus)))
    bus = [m.get("pci_bus_id", "") for m in meta]
    assert len(set(bus)) == len(bus), bus
    assert all(m["fp8ort.gpu_arch"].startswith(("sm_", "gfx")) for m in meta), meta


def test_a_session_per_gpu_runs_there(rng):
    model, feed = _model_and_feed(rng)
    cpu = fp8ort.InferenceSession(model, device="cpu", strict=True).run(None, feed)[0]
    for k in range(len(_gpus())):
        sess = fp8ort.InferenceSession(model, device=f"gpu:{k}", strict=True)
        assert sess.device == f"gpu:{k}" and set(sess.placement.values()) == {EP}
        got = sess.run(None, feed)[0]
        assert fp8ort.sqnr_db(cpu, got) > 40.0


def test_out_of_range_gpu_is_refused_naming_the_devices():
    model, _ = _model_and_feed(np.random.default_rng(0))
    n = len(_gpus())
    with pytest.raises(RuntimeError, match=rf"gpu:{n}"):
        fp8ort.InferenceSession(model, device=f"gpu:{n}")


def test_two_gpus_from_two_threads(rng):
    if len(_gpus()) < 2:
        pytest.skip(f"needs two GPU devices; the EP offers {len(_gpus())}")
    model, feed = _model_and_feed(rng)
    sessions = [fp8ort.InferenceSession(model, device=f"gpu:{k}", strict=True) for k in (0, 1)]
    want = sessions[0].run(None, feed)[0]
    results: dict[int, list] = {0: [], 1: []}

    def work(k: int) -> None:
        for _ in range(50):
            results[k].append(sessions[k].run(None, feed)[0])

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in (0, 1):
        assert len(results[k]) == 50
        for r in results[k]:
            np.testing.assert_array_equal(r, want)
