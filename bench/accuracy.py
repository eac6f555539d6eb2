"""The accuracy table: fp8ort's calibration methods and accuracy-target mode against ORT's own FP8 and INT8 tools.

    python bench/accuracy.py            # writes bench/results/accuracy.json and bench/results/accuracy.md

ResNet-50 (random weights, fp8ort.zoo) and EfficientNet-Lite0 (real ImageNet weights,
models/efficientnet_lite0.py), both calibrated on 32 crops of 8 skimage images and evaluated on 16 crops of 4 other
photos. The real PP-OCRv4 recognizer and detector (models/ocr.py, from the rapidocr-onnxruntime wheel), calibrated
on rendered text lines/pages and evaluated on others (other strings, sizes, offsets, noise): the recognizer's line
identity (greedy CTC decoding equal to the FP32 model's) and output SQNR, the detector's probability-map SQNR.
Metrics against the FP32 model on the held-out crops: logit SQNR, top-1 agreement; the share of
Conv/Gemm/MatMul MACs in FP8 (for ORT's rows: weights behind a DequantizeLinear, INT8 in the INT8 row); the
quantization time. fp8ort rows run the standard-QDQ twin of each model on ORT's CPU EP (the numerics of the
com.fp8ort kernels up to float32 summation order).

    python bench/accuracy.py --only ocr_det --rows max mse --power-of-two-scales both   # some rows, A/B

``--rows`` runs some rows only and puts them in place of the same rows of the last results (the others are kept);
``--power-of-two-scales on|off|both`` runs the fp8ort rows with that ``QuantizeConfig.power_of_two_scales``, labelled
``pow2 scales on``/``off`` (without it: the config's default, unlabelled).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import fp8ort.quantization as fq  # noqa: E402 (after the sys.path line, for runs from a checkout)
from fp8ort import zoo  # noqa: E402
from fp8ort.numerics import sqnr_db  # noqa: E402

# accuracy-target rows per model: (accuracy_target_db, calibration_method)
TARGETS = {
    "resnet50": ((30.0, "max"),),
    "efficientnet_lite0": ((20.0, "max"), (20.0, "mse")),
    "ocr_rec": ((20.0, "max"), (20.0, "mse"), (22.0, "max")),
    "ocr_det": ((15.0, "max"), (15.0, "mse")),
}
OCR_CALIB_LINES, OCR_EVAL_LINES = 48, 96  # rendered text lines (calibration seed 0, evaluation seed 1)
OCR_CALIB_PAGES, OCR_EVAL_PAGES = 8, 8  # rendered 320x320 pages
METHODS = ("max", "percentile", "mse", "entropy")  # fp8ort rows without a target (the OCR models: max and mse)
ROWS = (*METHODS, "target", "target-max", "target-mse", "ort")  # --rows: the target rows (all, or by method), ORT's
POW2_LABEL = ", pow2 scales "  # label suffix of rows run with --power-of-two-scales
POW2_NOTE = (
    " Rows labelled `pow2 scales on`/`off` ran with `QuantizeConfig.power_of_two_scales` on (every activation scale"
    " rounded up to a power of two) or off (amax / 448); unlabelled rows ran with the config's default of their date"
    " (off so far: amax / 448)."
)


def fp8ort_configs(name: str, rows: tuple[str, ...], pow2: str) -> list[tuple[str, fq.QuantizeConfig]]:
    """(label, config) of the fp8ort rows of ``name`` among ``rows``, each with the scale rules ``pow2`` asks for."""
    variants = [("", {})]
    if pow2 != "default":
        variants = [
            (POW2_LABEL + v, {"power_of_two_scales": v == "on"}) for v in (("off", "on") if pow2 == "both" else (pow2,))
        ]
    methods = METHODS if not name.startswith("ocr_") else ("max", "mse")
    out = [
        (f"{m}{suffix}", fq.QuantizeConfig(calibration_method=m, format="qdq", **kw))
        for m in methods
        if m in rows
        for suffix, kw in variants
    ]
    for target, m in TARGETS[name]:
        if "target" in rows or f"target-{m}" in rows:
            out += [
                (
                    f"accuracy_target_db={target:g} ({m}){suffix}",
                    fq.QuantizeConfig(format="qdq", calibration_method=m, accuracy_target_db=target, **kw),
                )
                for suffix, kw in variants
            ]
    return out


def _session_options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    # ORT 1.30 fuses DQ(FP8)+MatMul into MatMulIntegerToFloat, which then refuses FP8 inputs: run QDQ as written
    so.add_session_config_entry("session.disable_quant_qdq", "1")
    return so


def _run(path_or_bytes, x: np.ndarray, name: str = "input") -> np.ndarray:
    sess = ort.InferenceSession(path_or_bytes, _session_options(), providers=["CPUExecutionProvider"])
    return sess.run(None, {name: x})[0]


def _row(name: str, ref: np.ndarray, out: np.ndarray | None, share: float | None, secs: float, note: str = "") -> dict:
    if out is None:
        return {
            "method": name,
            "sqnr_db": None,
            "top1_agreement": None,
            "fp8_mac_share": share,
            "quantize_s": round(secs, 1),
            "note": note,
        }
    return {
        "method": name,
        "sqnr_db": round(float(sqnr_db(ref, out)), 2),
        "top1_agreement": float(np.mean(ref.argmax(1) == out.argmax(1))),
        "fp8_mac_share": None if share is None else round(share, 4),
        "quantize_s": round(secs, 1),
        "note": note,
    }


class _Reader:
    def __init__(self, x: np.ndarray) -> None:
        self.it = iter([{"input": x[i : i + 1]} for i in range(len(x))])

    def get_next(self):
        return next(self.it, None)


def ort_tool(model: str, calib: np.ndarray, fp8: bool, tmp: str) -> tuple[str | None, float, str]:
    """ORT's quantize_static: FP8 (Distribution calibration, the only one it takes) or INT8 per-channel QDQ."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    out = os.path.join(tmp, "ort_fp8.onnx" if fp8 else "ort_int8.onnx")
    t = time.perf_counter()
    try:
        if fp8:
            quantize_static(
                model,
                out,
                _Reader(calib),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QFLOAT8E4M3FN,
                weight_type=QuantType.QFLOAT8E4M3FN,
                calibrate_method=CalibrationMethod.Distribution,
                per_channel=False,
            )
        else:
            quantize_static(
                model,
                out,
                _Reader(calib),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QInt8,
                weight_type=QuantType.QInt8,
                per_channel=True,
                calibrate_method=CalibrationMethod.MinMax,
            )
    except (RuntimeError, ValueError, TypeError, KeyError, AttributeError) as exc:  # the tool's own failures
        return None, time.perf_counter() - t, f"quantize_static failed: {type(exc).__name__}: {str(exc)[:120]}"
    return out, time.perf_counter() - t, ""


def _qdq_share(path: str, macs: dict[str, int]) -> float | None:
    """Share of Conv/Gemm/MatMul MACs whose weight comes through a DequantizeLinear in ORT's QDQ model."""
    m = onnx.load(path)
    dq = {o for n in m.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    anchors = [n for n in m.graph.node if n.op_type in ("Conv", "Gemm", "MatMul") and n.name in macs]
    total = sum(macs.values())
    return sum(macs[n.name] for n in anchors if n.input[1] in dq) / total if total else None


def bench_model(
    name: str,
    path: str,
    calib: np.ndarray,
    evals: np.ndarray,
    tmp: str,
    rows_asked: tuple[str, ...] = ROWS,
    pow2: str = "default",
) -> list[dict]:
    ref = _run(path, evals)
    rows, rep = [], None
    for label, cfg in fp8ort_configs(name, rows_asked, pow2):
        t = time.perf_counter()
        q, rep = fq.quantize(path, calibration_data={"input": calib}, config=cfg, return_report=True)
        secs = time.perf_counter() - t
        note = ""
        if cfg.accuracy_target_db:
            note = _target_note(rep)
        rows.append(_row(f"fp8ort {label}", ref, _run(q.SerializeToString(), evals), rep.fp8_mac_share, secs, note))
        print(name, rows[-1], flush=True)
    if "ort" not in rows_asked:
        return rows
    if rep is None:  # the MACs of every layer come from an fp8ort report
        rep = fq.quantize(path, calibration_data={"input": calib}, return_report=True)[1]
    macs = {n.name: n.macs for n in rep.nodes if n.macs}
    for fp8 in (True, False):
        out, secs, note = ort_tool(path, calib, fp8, tmp)
        share = None if out is None else _qdq_share(out, macs)
        label = "ORT quantize_static FP8 E4M3FN (Distribution)" if fp8 else "ORT quantize_static INT8 per-channel QDQ"
        res = None
        if out is not None:
            try:
                res = _run(out, evals)
            except Exception as exc:
                note = f"ORT refuses to load/run it: {str(exc)[:140]}"
        rows.append(_row(label, ref, res, share, secs, note))
        print(name, rows[-1], flush=True)
    return rows


def _target_note(rep) -> str:
    searched = [n for n in rep.notes if "kept in float give" in n]
    missed = [n for n in rep.notes if "not reached" in n]
    return (
        f"{len(rep.kept_in_float)} layers kept float"
        + (f"; search: {searched[0].split('give ', 1)[1].split(' (')[0]} (worst batch)" if searched else "")
        + ("; target not reached on calibration data" if missed else "")
    )


def bench_ocr(name: str, rows_asked: tuple[str, ...] = ROWS, pow2: str = "default") -> list[dict]:
    """PP-OCRv4 recognizer (line identity vs the FP32 decoding) or detector (probability-map SQNR)."""
    from models import ocr

    rec = name == "ocr_rec"
    if rec:
        model = ocr.with_input_shape(ocr.recognizer_path(), ocr.REC_HEIGHT, ocr.REC_WIDTH)
        calib, evals = ocr.render_lines(OCR_CALIB_LINES, seed=0)[0], ocr.render_lines(OCR_EVAL_LINES, seed=1)[0]
        chars = ocr.character_list(ocr.recognizer_path())
    else:
        model = ocr.with_input_shape(ocr.detector_path(), ocr.PAGE_SIDE, ocr.PAGE_SIDE)
        calib, evals = ocr.render_pages(OCR_CALIB_PAGES, seed=0), ocr.render_pages(OCR_EVAL_PAGES, seed=1)
    data = model.SerializeToString()
    ref = _run(data, evals, "x")
    ref_text = ocr.ctc_decode(ref, chars) if rec else None
    rows = []
    for label, cfg in fp8ort_configs(name, rows_asked, pow2):
        t = time.perf_counter()
        q, rep = fq.quantize(model, calibration_data={"x": calib}, config=cfg, return_report=True)
        secs = time.perf_counter() - t
        out = _run(q.SerializeToString(), evals, "x")
        agree = float(np.mean([a == b for a, b in zip(ref_text, ocr.ctc_decode(out, chars))])) if rec else None
        rows.append(
            {
                "method": f"fp8ort {label}",
                "sqnr_db": round(float(sqnr_db(ref, out)), 2),
                "top1_agreement": agree,
                "fp8_mac_share": round(rep.fp8_mac_share, 4),
                "quantize_s": round(secs, 1),
                "note": _target_note(rep) if cfg.accuracy_target_db else "",
            }
        )
        print(name, rows[-1], flush=True)
    return rows


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def _env(results: dict) -> str:
    return f"{results['machine']}; onnxruntime {results['versions']['onnxruntime']}, onnx {results['versions']['onnx']}"


def _generated_by(results: dict) -> str:
    """Which runs made the table: one, or (after runs of some rows) each with the rows it wrote."""
    runs = results.get("runs")
    if not runs:
        return f"Generated by `{results['command']}` on {results['date']}; {_env(results)}."
    parts = [f"`{r['command']}` on {r['date']} ({r['rows']}; {r['env']})" for r in runs]
    return "Generated by " + ", then ".join(parts) + "."


def to_markdown(results: dict) -> str:
    lines = [
        _generated_by(results),
        f"Calibration: {results['calibration']}. Evaluation: {results['evaluation']}. Metrics are against the FP32 "
        "model on the held-out data; fp8ort rows run the standard FP8 QDQ twin on ORT's CPU EP (QDQ fusions off: "
        "ORT 1.30 fuses DQ(FP8)+MatMul into a MatMulIntegerToFloat that refuses FP8).",
        "Output SQNR: logits (ImageNet models), the per-step character probabilities (ocr_rec), the text "
        "probability map (ocr_det). Agreement: top-1 (ImageNet models), decoded line identical to the FP32 "
        "model's (ocr_rec). The accuracy-target search scores the logits in front of a Softmax output and requires "
        "the target on every search batch of 8 calibration samples."
        + (POW2_NOTE if any(POW2_LABEL in r["method"] for rows in results["models"].values() for r in rows) else ""),
        "",
        "| model | method | output SQNR vs FP32 (dB) | agreement | MACs in FP8 | quantize time (s) | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for model, rows in results["models"].items():
        for r in rows:
            sq = "—" if r["sqnr_db"] is None else f"{r['sqnr_db']:.1f}"
            t1 = "—" if r["top1_agreement"] is None else f"{100 * r['top1_agreement']:.0f}%"
            share = "—" if r["fp8_mac_share"] is None else f"{100 * r['fp8_mac_share']:.1f}%"
            lines.append(f"| {model} | {r['method']} | {sq} | {t1} | {share} | {r['quantize_s']:.1f} | {r['note']} |")
    return "\n".join(lines) + "\n"


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` with each row of ``new`` in place of the row of the same label, else after the last row of its method
    (``fp8ort max, pow2 scales on`` after ``fp8ort max``), else after the last fp8ort row."""
    out = list(old)
    for r in new:
        labels = [o["method"] for o in out]
        if r["method"] in labels:
            out[labels.index(r["method"])] = r
            continue
        base = r["method"].split(POW2_LABEL)[0]
        fp8ort = [i for i, label in enumerate(labels) if label.startswith("fp8ort")]
        same = [i for i, label in enumerate(labels) if label.split(POW2_LABEL)[0] == base]
        out.insert((same or fp8ort or [len(out) - 1])[-1] + 1, r)
    return out


def _rows_run(args: argparse.Namespace, partial: bool) -> str:
    what = f"{'rows ' + ', '.join(args.rows) if partial else 'all rows'} of {', '.join(args.only)}"
    if args.power_of_two_scales != "default":
        what += f", power_of_two_scales {args.power_of_two_scales} (the rows labelled `pow2 scales`)"
    return what


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "accuracy"))
    p.add_argument("--only", choices=sorted(TARGETS), nargs="+", default=sorted(TARGETS))
    p.add_argument(
        "--rows",
        choices=ROWS,
        nargs="+",
        default=list(ROWS),
        help="run these rows only, in place of the same rows of the last results (default: all, replacing them)",
    )
    p.add_argument(
        "--power-of-two-scales",
        choices=("default", "on", "off", "both"),
        default="default",
        help="QuantizeConfig.power_of_two_scales of the fp8ort rows (on/off/both: labelled rows)",
    )
    args = p.parse_args()
    partial = set(args.rows) != set(ROWS)
    os.makedirs(args.models_dir, exist_ok=True)
    eff = os.path.join(args.models_dir, "efficientnet_lite0.onnx")
    r50 = os.path.join(args.models_dir, "resnet50.onnx")
    calib = evals = np.zeros((0,), np.float32)  # the photos: only the ImageNet models need them
    if any(not m.startswith("ocr_") for m in args.only):
        if not os.path.exists(eff) or not os.path.exists(os.path.join(args.models_dir, "photos_eval.npz")):
            subprocess.run(
                [sys.executable, os.path.join(ROOT, "models", "efficientnet_lite0.py"), "--out-dir", args.models_dir],
                check=True,
                env={**os.environ, "PYTHONPATH": ROOT},
            )
        if not os.path.exists(r50):
            onnx.save(zoo.resnet50(), r50)
        calib = np.load(os.path.join(args.models_dir, "photos_calib.npz"))["input"]
        evals = np.load(os.path.join(args.models_dir, "photos_eval.npz"))["input"]
    results = {
        "command": " ".join(["python", "bench/accuracy.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": _machine(),
        "versions": {
            "onnxruntime": ort.__version__,
            "onnx": onnx.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "calibration": "32 crops of 8 skimage images (textures, microscopy, astronomy, grayscale); ocr_rec: "
        f"{OCR_CALIB_LINES} rendered lines; ocr_det: {OCR_CALIB_PAGES} rendered 320x320 pages",
        "evaluation": "16 crops of 4 held-out skimage photos (chelsea, astronaut, rocket, coffee); ocr_rec: "
        f"{OCR_EVAL_LINES} other rendered lines; ocr_det: {OCR_EVAL_PAGES} other pages",
        "calibration_samples": len(calib),
        "eval_samples": len(evals),
        "models": {},
    }
    old: dict = {}
    if os.path.exists(args.out + ".json"):  # --only: keep the other models' rows of the last run (--rows: all rows)
        with open(args.out + ".json") as f:
            old = json.load(f)
    if not len(calib):  # OCR models only: the photo counts stay those of the last run
        results["calibration_samples"] = old.get("calibration_samples", 0)
        results["eval_samples"] = old.get("eval_samples", 0)
    keep = [k for k in old.get("models", {}) if k not in args.only or partial]
    results["models"] = {k: old["models"][k] for k in keep}
    results["model_dates"] = {k: v for k, v in old.get("model_dates", {}).items() if k in keep}
    results["model_dates"].update({k: old["date"] for k in keep if k not in results["model_dates"]})
    if old.get("notes"):
        results["notes"] = old["notes"]
    runs = []
    if keep and (partial or old.get("runs")):  # the table mixes runs: say which rows each one wrote
        dates = ", ".join(f"{k} {d}" for k, d in old.get("model_dates", {}).items())
        runs = old.get("runs") or [
            {"command": old["command"], "date": old["date"], "rows": f"rows dated per model: {dates}", "env": _env(old)}
        ]
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only:
            t = time.perf_counter()
            if name.startswith("ocr_"):
                rows = bench_ocr(name, tuple(args.rows), args.power_of_two_scales)
            else:
                path = r50 if name == "resnet50" else eff
                rows = bench_model(name, path, calib, evals, tmp, tuple(args.rows), args.power_of_two_scales)
            seconds[name] = round(time.perf_counter() - t, 1)
            print(f"{name}: {seconds[name]:.0f} s", flush=True)
            if partial:
                results["models"][name] = merge_rows(
                    results["models"].get(name, []), [{**r, "date": results["date"]} for r in rows]
                )
            else:
                results["models"][name] = rows
                results["model_dates"][name] = results["date"]
    if runs:
        this = {"command": results["command"], "date": results["date"], "rows": _rows_run(args, partial)}
        results["runs"] = [*runs, {**this, "env": _env(results), "seconds": seconds}]
    with open(args.out + ".json", "w") as f:
        json.dump(results, f, indent=1)
    text = to_markdown(results)
    if os.path.exists(args.out + ".md"):  # the notes written under the table (its ## sections) stay
        with open(args.out + ".md") as f:
            notes = f.read().split("\n## ", 1)
        if len(notes) == 2:
            text += "\n## " + notes[1]
    with open(args.out + ".md", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
