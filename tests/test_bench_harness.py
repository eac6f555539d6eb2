"""The GPU benchmark's logic that needs no GPU: the ORT CUDA worker's call and contract, the merge of its rows,
``--update``, and the table/plot writer (bench/harness.py, bench/ort_cuda_fp16.py, bench/plot.py). Nothing is
timed here: the worker's one CPU run only checks that its pieces fit together and that its FP16 model computes."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
import plot  # noqa: E402


def sqnr_db(ref: np.ndarray, y: np.ndarray) -> float:
    ref, y = ref.astype(np.float64), y.astype(np.float64)
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - y) ** 2)))


def fake_worker(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "fake_worker.py"
    script.write_text("import json, os, sys, time\n" + body)
    return [sys.executable, str(script)]


def tiny_cnn(path: Path) -> None:
    """Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm with the exports' names and dynamic batch N."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32) * 0.1, "b"),
        numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "fc_w"),
        numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "fc_b"),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "w", "b"], ["c"], strides=[8, 8]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def test_inputs_are_the_same_for_parent_and_worker():
    a, b = harness.make_inputs("bert", 3, seed=2), harness.make_inputs("bert", 3, seed=2)
    assert a.keys() == {"input_ids", "attention_mask"}
    assert a["input_ids"].shape == (3, harness.BERT_SEQ) and a["input_ids"].dtype == np.int64
    np.testing.assert_array_equal(a["input_ids"], b["input_ids"])
    assert int(a["input_ids"].max()) < harness.BERT_VOCAB
    x = harness.make_inputs("resnet50", 2, seed=2)["input"]
    assert x.shape == (2, 3, 224, 224) and x.dtype == np.float32
    assert not np.array_equal(x, harness.make_inputs("resnet50", 2, seed=3)["input"])


def test_run_worker_passes_arguments_and_site_and_reads_the_last_line(tmp_path):
    cmd = fake_worker(
        tmp_path,
        "print('noise from a converter')\n"
        "print(json.dumps({'results': {}, 'argv': sys.argv[1:], 'site': os.environ['PYTHONPATH']}))\n",
    )
    rec = harness.run_worker("/some/site", "bert", Path("/m.onnx"), [1, 32], 7, tmp_path / "w", command=cmd)
    assert rec["site"] == "/some/site"
    argv = rec["argv"]
    assert argv[:2] == ["bert", "/m.onnx"]
    assert argv[argv.index("--runs") + 1] == "7" and argv[argv.index("--device") + 1] == "cuda"
    assert argv[argv.index("--batches") + 1 :] == ["1", "32"]


@pytest.mark.parametrize(
    "body, message",
    [
        ("sys.stderr.write('Traceback\\nImportError: no onnxruntime\\n'); sys.exit(3)", "exit status 3: ImportError"),
        ("print('not json')", "not JSON"),
        ("print(json.dumps([1, 2]))", "no 'results'"),
        ("time.sleep(30)", "no result within 1 s"),
    ],
)
def test_a_failed_worker_marks_each_of_its_systems(tmp_path, body, message):
    rec = harness.run_worker(
        "", "resnet50", Path("m.onnx"), [1, 8], 3, tmp_path, timeout_s=1, command=fake_worker(tmp_path, body)
    )
    assert message in rec["error"]
    rows = harness.worker_rows(rec, "resnet50", [1, 8])
    assert set(rows) == {"1", "8"}
    for row in rows.values():
        assert set(row) == set(harness.ort_cuda_systems("resnet50"))
        assert all(message in v["error"] for v in row.values())


def test_merge_row_turns_outputs_into_sqnr(tmp_path):
    rng = np.random.default_rng(5)
    ref = rng.standard_normal((4, 10)).astype(np.float32)
    noisy = (ref + 0.01 * rng.standard_normal(ref.shape)).astype(np.float16)
    np.save(tmp_path / "y.npy", noisy)
    row = {"fp8ort": {"ms": 2.0, "per_s": 2000.0}}
    worker_row = {
        "ort_cuda_fp16": {"ms": 1.0, "per_s": 4000.0, "output": str(tmp_path / "y.npy")},
        "ort_cuda_fp16_nhwc_graph": {"ms": 0.5, "per_s": 8000.0, "output": str(tmp_path / "missing.npy")},
        "ort_cuda_fp16_x": {"error": "RuntimeError: boom"},
    }
    harness.merge_row(row, worker_row, ref, sqnr_db)
    assert row["fp8ort"] == {"ms": 2.0, "per_s": 2000.0}
    assert row["ort_cuda_fp16"]["sqnr_db_vs_fp32"] == pytest.approx(sqnr_db(ref, noisy.astype(np.float32)))
    assert 35 < row["ort_cuda_fp16"]["sqnr_db_vs_fp32"] < 45  # noise at 1% of the signal: about 40 dB
    assert "sqnr_error" in row["ort_cuda_fp16_nhwc_graph"]
    assert row["ort_cuda_fp16_x"] == {"error": "RuntimeError: boom"}
    assert not any("output" in v for v in row.values())
    assert "output" in worker_row["ort_cuda_fp16"]  # the worker's rows are not changed in place


def test_update_lays_rows_over_the_old_record():
    old = {
        "command": "first",
        "onnxruntime_gpu": "1.31.1",
        "results": {
            "resnet50": {"quantize_s": 5.0, "1": {"fp8ort": {"per_s": 1.0}, "torch_fp16_graph": {"per_s": 2.0}}},
            "bert": {"error": "TypeError: old failure"},
        },
    }
    new = {
        "command": "second",
        "onnxruntime_gpu": None,
        "results": {
            "resnet50": {"1": {"torch_compile_graph": {"per_s": 3.0}}, "32": {"torch_compile_graph": {"per_s": 4.0}}},
            "bert": {"1": {"fp8ort": {"per_s": 5.0}}},
        },
    }
    merged = harness.update_record(old, new)
    r50 = merged["results"]["resnet50"]
    assert r50["quantize_s"] == 5.0
    assert set(r50["1"]) == {"fp8ort", "torch_fp16_graph", "torch_compile_graph"}
    assert r50["32"] == {"torch_compile_graph": {"per_s": 4.0}}
    assert merged["results"]["bert"] == {"1": {"fp8ort": {"per_s": 5.0}}}
    assert merged["onnxruntime_gpu"] == "1.31.1" and merged["command"] == "second"
    assert merged["commands"] == ["first", "second"]
    assert "torch_compile_graph" not in old["results"]["resnet50"]["1"]


def synthetic_record() -> dict:
    return {
        "gpu": "NVIDIA H200, 580.159.04",
        "date": "2026-12-04",
        "onnxruntime": "1.30.0",
        "onnxruntime_gpu": "1.31.1",
        "timing": "median of 20 runs",
        "results": {
            "resnet50": {
                "fp8_mac_share": 1.0,
                "placement": {"Fp8OrtExecutionProvider": 57},
                "1": {
                    "fp8ort": {"ms": 1.0, "per_s": 1000.0, "sqnr_db_vs_fp32": 28.3},
                    "ort_cuda_fp16_nhwc_graph": {"ms": 0.5, "per_s": 1735.4},
                    "custom_system": {"per_s": 10.0},
                },
                "32": {
                    "fp8ort": {"ms": 3.0, "per_s": 10666.0, "sqnr_db_vs_fp32": 27.9},
                    "ort_cuda_fp16_nhwc_graph": {"error": "RuntimeError: capture failed"},
                },
                "256": {
                    "fp8ort": {"error": "RuntimeError: capture failed"},
                    "ort_cuda_fp16_nhwc_graph": {"error": "RuntimeError: out of memory"},
                },
            },
            "bert": {"error": "TypeError: export failed"},
        },
    }


def test_markdown_table():
    text = plot.markdown(synthetic_record())
    assert text.startswith(
        "# NVIDIA H200, 2026-12-04, onnxruntime 1.30.0 (plugin EP), onnxruntime-gpu 1.31.1 (CUDA EP)"
    )
    lines = text.splitlines()
    assert "| system | batch 1 | batch 32 | batch 256 |" in lines
    assert "| fp8ort FP8, plugin EP | 1,000 | 10,666 | failed (1) |" in lines
    assert "| ORT CUDA EP FP16, prefer_nhwc + CUDA graph | 1,735 | failed (1) | failed (2) |" in lines
    assert "| custom_system | 10 |  |  |" in lines  # unknown systems are listed last, under their key
    assert "1. RuntimeError: capture failed" in lines and "2. RuntimeError: out of memory" in lines
    assert "fp8ort: 100% of MACs in FP8, output SQNR vs FP32 27.9 dB (worst batch)." in lines
    assert "Not measured: TypeError: export failed" in lines
    assert "Models: exports" in text


def test_series_leave_out_failures():
    entry = synthetic_record()["results"]["resnet50"]
    assert plot.series(entry, "fp8ort") == ([1, 32], [1000.0, 10666.0])
    assert plot.systems(entry) == ["fp8ort", "ort_cuda_fp16_nhwc_graph", "custom_system"]


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "h200.png"
    plot.write_plot(synthetic_record(), out)
    head = out.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width > 2 * height  # two panels side by side


def test_without_matplotlib_the_table_is_still_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    src = tmp_path / "h200.json"
    src.write_text(json.dumps(synthetic_record()))
    assert plot.main([str(src)]) == 0
    assert (tmp_path / "h200.md").read_text().startswith("# NVIDIA H200")
    assert not (tmp_path / "h200.png").exists()
    assert "matplotlib is not installed" in capsys.readouterr().err


def test_worker_on_the_cpu_ep_converts_binds_and_reports(tmp_path):
    """The real worker, --device cpu, one run: FP16 model, sessions, IOBinding, outputs, JSON contract."""
    ort = pytest.importorskip("onnxruntime")
    model = tmp_path / "tiny.onnx"
    tiny_cnn(model)
    rec = harness.run_worker("", "resnet50", model, [1, 3], 1, tmp_path / "w", warmups=0, device="cpu")
    assert "error" not in rec, rec.get("error")
    assert rec["device"] == "cpu" and rec["fp16"]["plain"]["nodes"] == 5
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        ref = sess.run(None, harness.make_inputs("resnet50", batch, seed=2))[0]
        row: dict = {}
        harness.merge_row(row, harness.worker_rows(rec, "resnet50", [batch])[str(batch)], ref, sqnr_db)
        assert set(row) == set(harness.ort_cuda_systems("resnet50"))
        for key, value in row.items():
            assert "error" not in value, (key, value)
            assert value["per_s"] > 0
            assert value["sqnr_db_vs_fp32"] > 40, (key, value)  # FP16 of a small float model
