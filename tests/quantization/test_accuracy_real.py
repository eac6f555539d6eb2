"""The accuracy-target mode on a real model: the PP-OCRv4 text recognizer (rapidocr-onnxruntime wheel), calibrated
on rendered text lines and checked on other rendered lines it never saw."""

from __future__ import annotations

import importlib.util

import numpy as np
import onnxruntime as ort
import pytest

# find_spec, not import: the wheel's __init__ imports opencv etc., which a --no-deps install lacks
if importlib.util.find_spec("rapidocr_onnxruntime") is None:
    pytest.skip("needs the PP-OCRv4 models: pip install --no-deps rapidocr-onnxruntime==1.4.4", allow_module_level=True)
pytest.importorskip("PIL", reason="needs Pillow to render text lines: pip install Pillow")

import fp8ort.quantization as fq  # noqa: E402
from fp8ort.numerics import sqnr_db  # noqa: E402
from models import ocr  # noqa: E402

WIDTH = 160  # narrow lines keep the test fast
TARGET_DB = 20.0  # on the logits in front of the Softmax (at 15 dB ~80% of held-out lines match)


def _run(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _logits(probs: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(probs.astype(np.float64), 1e-30))


def test_ctc_decode_merges_repeats_and_drops_blanks() -> None:
    chars = ["blank", "a", "b", " "]
    probs = np.eye(4, dtype=np.float32)[[1, 1, 0, 1, 2, 2, 0, 3, 0]][None]
    assert ocr.ctc_decode(probs, chars) == ["aab "]


def test_recognizer_target_holds_on_held_out_lines() -> None:
    model = ocr.with_input_shape(ocr.recognizer_path(), ocr.REC_HEIGHT, WIDTH)
    calib, _ = ocr.render_lines(16, seed=11, width=WIDTH)
    held, _ = ocr.render_lines(24, seed=12, width=WIDTH)
    chars = ocr.character_list()
    data = model.SerializeToString()
    ref = _run(data, held)
    ref_text = ocr.ctc_decode(ref, chars)
    q, rep = fq.quantize(
        model,
        calibration_data={"x": calib},
        return_report=True,
        config=fq.QuantizeConfig(format="qdq", accuracy_target_db=TARGET_DB),
    )
    got = _run(q.SerializeToString(), held)
    identical = np.mean([a == b for a, b in zip(ref_text, ocr.ctc_decode(got, chars))])
    plain = _run(
        fq.quantize(model, calibration_data={"x": calib}, config=fq.QuantizeConfig(format="qdq")).SerializeToString(),
        held,
    )
    # the target is on the logits in front of the Softmax output; log-probabilities differ from them by a
    # per-step constant, so compare the held-out log-probabilities' SQNR loosely and the decodings exactly
    assert sqnr_db(_logits(ref), _logits(got)) > sqnr_db(_logits(ref), _logits(plain))
    assert identical >= 0.9, (identical, rep.notes)
    assert rep.fp8_mac_share >= 0.8, (rep.fp8_mac_share, rep.kept_in_float)
