"""The fp8ort command line: quantize, info, and errors that name the fix."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnx_ir as ir
import qmodels

from fp8ort.cli import main


def test_quantize_command(tmp_path, resnetish, capsys):
    src, out, calib = tmp_path / "m.onnx", tmp_path / "m.fp8.onnx", tmp_path / "calib.npz"
    ir.save(resnetish, str(src))
    np.savez(calib, **qmodels.calib(resnetish))
    rc = main(
        [
            "quantize",
            str(src),
            "-o",
            str(out),
            "--calibration-data",
            str(calib),
            "--calibration-method",
            "percentile",
            "--exclude-nodes",
            "^Conv_9$",
            "--no-bias-correction",
            "--power-of-two-scales",
            "--weight-rounding",
            "compensated",
            "--activation-shift",
            "off",
            "--report-json",
            str(tmp_path / "r.json"),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "FP8 ops" in text and "exclude_nodes" in text
    onnx.checker.check_model(str(out), full_check=True)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["config"]["calibration_method"] == "percentile" and report["config"]["bias_correction"] is False
    assert report["config"]["weight_rounding"] == "compensated" and report["config"]["activation_shift"] is False
    assert report["config"]["power_of_two_scales"] is True
    assert {n["name"]: n["status"] for n in report["nodes"]}["Conv_9"] == "float"


def test_quantize_qdq_external_data(tmp_path, resnetish):
    src, out = tmp_path / "m.onnx", tmp_path / "m.qdq.onnx"
    ir.save(resnetish, str(src))
    rc = main(
        ["quantize", str(src), "-o", str(out), "--random-calibration", "--format", "qdq", "--external-data", "--quiet"]
    )
    assert rc == 0 and (tmp_path / "m.qdq.onnx.data").is_file()


def test_quantize_without_data_fails_with_fix(tmp_path, resnetish, capsys):
    src = tmp_path / "m.onnx"
    ir.save(resnetish, str(src))
    assert main(["quantize", str(src), "-o", str(tmp_path / "o.onnx")]) == 2
    assert "--calibration-data" in capsys.readouterr().err


def test_info(capsys):
    assert main(["info", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["onnxruntime"] and "providers" in d


def test_demo_quick(capsys):
    assert main(["demo", "--quick", "--calibration-images", "8", "--eval-images", "4", "--runs", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("model "))
    fp32, fp8 = lines[head + 1].split(), lines[head + 2].split()
    assert fp32[0] == "FP32" and fp8[0] == "FP8"
    size, sqnr, agree = float(fp8[-4].rstrip("%")), float(fp8[-3]), float(fp8[-2].rstrip("%"))
    assert size < 35.0 and sqnr > 15.0 and agree >= 50.0
